// Package toolkit reads the NVIDIA Container Toolkit's configuration
// (/etc/nvidia-container-runtime/config.toml) to tell whether an unprivileged
// container can still choose its GPUs through its own NVIDIA_VISIBLE_DEVICES. Where it
// can, a device plugin's choice means nothing, and the node agent hands out no GPU.
package toolkit
