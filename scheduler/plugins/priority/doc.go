// Package priority orders jobs by priority (higher first, then older first) and victims
// the other way round: lowest priority first, then youngest first.
package priority
