package autoscale

import (
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// Policy is a ScaleDownPolicy's spec with its defaults applied.
type Policy struct {
	Name     string
	Selector labels.Selector
	// IdleAfter is how long a node must qualify before it is a candidate.
	IdleAfter time.Duration
	// SurplusAfter is how long an empty node beyond the headroom must stay empty
	// before it is a candidate (0: every node waits IdleAfter), and BootTime the window
	// the headroom is measured over (Planner.headroom).
	SurplusAfter, BootTime time.Duration
	// UtilizationThreshold is the GPU utilization percent at or below which a GPU is idle.
	UtilizationThreshold int32
	MaxParallel          int
	Cooldown             time.Duration
	MinNodes             int
	PricePerGPUHour      float64
	DryRun               bool
	// UnderusedShare enables the Underused method: a node whose allocated GPU share
	// stayed at or below it for IdleAfter is a candidate when its pods fit elsewhere.
	// 0 disables it.
	UnderusedShare float64
}

// Defaults of the ScaleDownPolicy fields, as the CRD sets them.
const (
	DefaultIdleAfter = 10 * time.Minute
	DefaultCooldown  = 10 * time.Minute
	// DefaultSurplusAfter is the consolidateAfter of Karpenter's NodePool example.
	DefaultSurplusAfter = time.Minute
	// DefaultBootTime is how long a GPU node takes to come back when the policy does not
	// say: a cloud GPU node's launch, boot and driver start take minutes (the
	// simulator's scenarios take as long).
	DefaultBootTime    = 5 * time.Minute
	DefaultThreshold   = 5
	DefaultMaxParallel = 1
	DefaultMinNodes    = 1
	// DefaultUnderusedGPUPercent turns the Underused method on: nodes at or below half
	// their GPUs allocated go when their pods fit elsewhere, as Cluster Autoscaler's
	// utilization threshold and Karpenter's WhenEmptyOrUnderutilized remove them.
	DefaultUnderusedGPUPercent = 50
)

// PolicyFrom validates p and applies the defaults; errors name the field.
func PolicyFrom(p *tesserav1.ScaleDownPolicy) (Policy, error) {
	s := p.Spec
	out := Policy{Name: p.Name, Selector: labels.Everything(), IdleAfter: DefaultIdleAfter, Cooldown: DefaultCooldown,
		SurplusAfter: DefaultSurplusAfter, BootTime: DefaultBootTime,
		UtilizationThreshold: s.GPUUtilizationThreshold, MaxParallel: int(s.MaxParallel), MinNodes: DefaultMinNodes, DryRun: s.DryRun}
	if s.MinNodes != nil {
		out.MinNodes = int(*s.MinNodes)
	}
	if s.NodeSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(s.NodeSelector)
		if err != nil {
			return out, fmt.Errorf("ScaleDownPolicy %s: spec.nodeSelector: %w; fix the selector", p.Name, err)
		}
		out.Selector = sel
	}
	if s.IdleAfter != nil {
		if s.IdleAfter.Duration <= 0 {
			return out, fmt.Errorf("ScaleDownPolicy %s: spec.idleAfter %s must be positive (for example 30m)", p.Name, s.IdleAfter.Duration)
		}
		out.IdleAfter = s.IdleAfter.Duration
	}
	if s.SurplusAfter != nil {
		if s.SurplusAfter.Duration <= 0 {
			return out, fmt.Errorf("ScaleDownPolicy %s: spec.surplusAfter %s must be positive (for example 1m; set it to idleAfter to wait idleAfter for every node)", p.Name, s.SurplusAfter.Duration)
		}
		out.SurplusAfter = s.SurplusAfter.Duration
	}
	if s.BootTime != nil {
		if s.BootTime.Duration < 0 {
			return out, fmt.Errorf("ScaleDownPolicy %s: spec.bootTime %s must not be negative (for example 5m)", p.Name, s.BootTime.Duration)
		}
		out.BootTime = s.BootTime.Duration
	}
	if s.Cooldown != nil {
		if s.Cooldown.Duration < 0 {
			return out, fmt.Errorf("ScaleDownPolicy %s: spec.cooldown %s must not be negative (for example 10m)", p.Name, s.Cooldown.Duration)
		}
		out.Cooldown = s.Cooldown.Duration
	}
	if s.GPUUtilizationThreshold < 0 || s.GPUUtilizationThreshold > 100 {
		return out, fmt.Errorf("ScaleDownPolicy %s: spec.gpuUtilizationThreshold %d must be a percent in [0, 100]", p.Name, s.GPUUtilizationThreshold)
	}
	underused := int32(DefaultUnderusedGPUPercent)
	if s.UnderusedGPUPercent != nil {
		underused = *s.UnderusedGPUPercent
	}
	if underused < 0 || underused > 100 {
		return out, fmt.Errorf("ScaleDownPolicy %s: spec.underusedGPUPercent %d must be a percent in [0, 100] (0 removes empty nodes only)", p.Name, underused)
	}
	out.UnderusedShare = float64(underused) / 100
	if out.MaxParallel == 0 {
		out.MaxParallel = DefaultMaxParallel
	}
	if out.MaxParallel < 0 || out.MinNodes < 0 {
		return out, fmt.Errorf("ScaleDownPolicy %s: spec.maxParallel %d and spec.minNodes %d must not be negative", p.Name, s.MaxParallel, out.MinNodes)
	}
	if s.PricePerGPUHour != "" {
		f, err := strconv.ParseFloat(s.PricePerGPUHour, 64)
		if err != nil || f < 0 {
			return out, fmt.Errorf("ScaleDownPolicy %s: spec.pricePerGPUHour %q must be a non-negative decimal such as \"2.50\"", p.Name, s.PricePerGPUHour)
		}
		out.PricePerGPUHour = f
	}
	return out, nil
}
