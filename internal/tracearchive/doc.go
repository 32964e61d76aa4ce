// Package tracearchive reads the series of a trace shipped as a gzip-compressed tar
// archive holding one CSV file, as the genai2026 per-pod GPU series ship.
package tracearchive
