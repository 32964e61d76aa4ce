// Package leastallocated is kube-scheduler's default LeastAllocated strategy: prefer
// the node with the most free CPU and memory after placing the task (spreading).
package leastallocated
