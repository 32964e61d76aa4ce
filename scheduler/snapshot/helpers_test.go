package snapshot

import "errors"

func asObjectError(err error, target **ObjectError) bool { return errors.As(err, target) }
