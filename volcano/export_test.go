package volcano

// FakeSSHKeys makes every conversion use placeholder bytes for the ssh plugin's key
// pair until restore is called: fuzzing then spends its time on the conversion, not
// on making RSA keys.
func FakeSSHKeys() (restore func()) {
	newSSHKeyPair = func() ([]byte, []byte, error) { return []byte("private"), []byte("public"), nil }
	return func() { newSSHKeyPair = sshKeyPair }
}
