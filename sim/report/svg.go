package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// palette colours policies in the order they first appear (Tableau 10).
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// Chart geometry, in SVG user units.
const (
	chartW, chartH                   = 560, 330
	padLeft, padRight, padTop, padBt = 58, 18, 34, 48
)

// series is one line of a line chart.
type series struct {
	name, color string
	xs, ys      []float64
}

// guide is a dashed reference line from (x1,y1) to (x2,y2) in data units, with an
// optional label ending just above and left of (lx,ly).
type guide struct {
	x1, y1, x2, y2 float64
	label          string
	lx, ly         float64
}

// lineChart is a chart of lines against numeric axes.
type lineChart struct {
	title, xLabel, yLabel string
	xMin, xMax            float64
	yMin, yMax            float64
	// step draws each line as a step function (values hold until the next sample).
	step   bool
	series []series
	guides []guide
}

// frame maps data coordinates into the plot area.
type frame struct{ xMin, xMax, yMin, yMax float64 }

func (f frame) x(v float64) float64 {
	return padLeft + (v-f.xMin)/(f.xMax-f.xMin)*(chartW-padLeft-padRight)
}

func (f frame) y(v float64) float64 {
	return chartH - padBt - (v-f.yMin)/(f.yMax-f.yMin)*(chartH-padTop-padBt)
}

// render writes the chart as an inline <svg> element.
func (c lineChart) render(b *strings.Builder) {
	// The x axis spans the data exactly (ticks past it are dropped); the y axis is
	// rounded up to the next tick.
	xt := niceTicks(c.xMin, c.xMax, 7)
	for len(xt) > 2 && xt[len(xt)-1] > c.xMax+1e-9 {
		xt = xt[:len(xt)-1]
	}
	yt := niceTicks(c.yMin, c.yMax, 6)
	f := frame{c.xMin, math.Max(c.xMax, xt[len(xt)-1]), yt[0], yt[len(yt)-1]}
	openSVG(b, c.title)
	axes(b, f, xt, yt, c.xLabel, c.yLabel)
	b.WriteString(`<g>`)
	for _, g := range c.guides {
		fmt.Fprintf(b, `<line class="guide" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, f.x(g.x1), f.y(g.y1), f.x(g.x2), f.y(g.y2))
		if g.label != "" {
			fmt.Fprintf(b, `<text class="guide-label" x="%.1f" y="%.1f">%s</text>`, f.x(g.lx)-6, f.y(g.ly)-6, esc(g.label))
		}
	}
	for _, s := range c.series {
		if len(s.xs) == 0 {
			continue
		}
		fmt.Fprintf(b, `<polyline class="series" stroke="%s" points="`, s.color)
		for i := range s.xs {
			x, y := f.x(clamp(s.xs[i], f.xMin, f.xMax)), f.y(clamp(s.ys[i], f.yMin, f.yMax))
			if c.step && i > 0 {
				fmt.Fprintf(b, "%.1f,%.1f ", x, f.y(clamp(s.ys[i-1], f.yMin, f.yMax)))
			}
			fmt.Fprintf(b, "%.1f,%.1f ", x, y)
		}
		fmt.Fprintf(b, `"><title>%s</title></polyline>`, esc(s.name))
	}
	b.WriteString(`</g></svg>`)
}

// barChart is a grouped bar chart: one group per category, one bar per series.
type barChart struct {
	title, xLabel, yLabel string
	categories            []string
	series                []series // ys[i] is the value for categories[i]
}

func (c barChart) render(b *strings.Builder) {
	yMax := 0.0
	for _, s := range c.series {
		for _, v := range s.ys {
			yMax = max(yMax, v)
		}
	}
	if yMax == 0 {
		yMax = 1
	}
	yt := niceTicks(0, yMax, 6)
	f := frame{0, float64(len(c.categories)), 0, yt[len(yt)-1]}
	openSVG(b, c.title)
	axes(b, f, nil, yt, c.xLabel, c.yLabel)
	groupW := f.x(1) - f.x(0)
	barW := groupW * 0.8 / float64(max(len(c.series), 1))
	for i, cat := range c.categories {
		x0 := f.x(float64(i)) + groupW*0.1
		for j, s := range c.series {
			v := s.ys[i]
			top := f.y(v)
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %.1f</title></rect>`,
				x0+float64(j)*barW, top, math.Max(barW-1, 1), f.y(0)-top, s.color, esc(s.name), esc(cat), v)
		}
		fmt.Fprintf(b, `<text class="tick" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, f.x(float64(i)+0.5), f.y(0)+16, esc(cat))
	}
	b.WriteString(`</svg>`)
}

func openSVG(b *strings.Builder, title string) {
	fmt.Fprintf(b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s">`, chartW, chartH, esc(title))
	fmt.Fprintf(b, `<text class="chart-title" x="%d" y="20">%s</text>`, padLeft, esc(title))
}

// axes draws the grid, tick labels and axis titles; xt nil leaves x ticks to the caller.
func axes(b *strings.Builder, f frame, xt, yt []float64, xLabel, yLabel string) {
	x0, x1, y0, y1 := f.x(f.xMin), f.x(f.xMax), f.y(f.yMin), f.y(f.yMax)
	for _, v := range yt {
		y := f.y(v)
		fmt.Fprintf(b, `<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x0, y, x1, y)
		fmt.Fprintf(b, `<text class="tick" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, x0-6, y+4, fmtTick(v))
	}
	for _, v := range xt {
		x := f.x(v)
		fmt.Fprintf(b, `<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x, y0, x, y1)
		fmt.Fprintf(b, `<text class="tick" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x, y0+16, fmtTick(v))
	}
	fmt.Fprintf(b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x0, y0, x1, y0)
	fmt.Fprintf(b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x0, y0, x0, y1)
	fmt.Fprintf(b, `<text class="axis-label" x="%.1f" y="%d" text-anchor="middle">%s</text>`, (x0+x1)/2, chartH-8, esc(xLabel))
	fmt.Fprintf(b, `<text class="axis-label" transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">%s</text>`, (y0+y1)/2, esc(yLabel))
}

// niceTicks returns about n evenly spaced round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if !(hi > lo) {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(max(n-1, 1))
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	// Round ticks to the step's decimals so that 3 x 0.2 prints as 0.6.
	scale := math.Pow(10, math.Max(0, 1-math.Floor(math.Log10(step))))
	var ticks []float64
	for k := math.Floor(lo/step + 1e-9); ; k++ {
		v := math.Round(k*step*scale) / scale
		ticks = append(ticks, v)
		if v >= hi-1e-9*step {
			return ticks
		}
	}
}

func fmtTick(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func clamp(v, lo, hi float64) float64 { return math.Min(math.Max(v, lo), hi) }

func esc(s string) string { return html.EscapeString(s) }
