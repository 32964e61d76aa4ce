// Package nvidiatest builds simulated GPU nodes for tests from go-nvml's own mock
// servers (pkg/nvml/mock/dgxa100, dgxh100): it fills in what those mocks leave out
// (NVLink and PCIe topology, NUMA, utilisation, temperature, processes, events) and
// injects failures (NVML init failing, a GPU falling off the bus, Xid errors).
package nvidiatest
