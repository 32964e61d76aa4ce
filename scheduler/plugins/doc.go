// Package plugins collects the scheduler's plugins, one per subpackage, each a pure
// function of the snapshot behind one of the framework's one-method interfaces.
package plugins
