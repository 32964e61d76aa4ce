package report

import (
	"fmt"
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

// svgChart is a chart ready for the "chart" template: positions in SVG user units,
// text as it is (the template escapes it). A line chart has Guides and Lines, a bar
// chart (Bar) Groups.
type svgChart struct {
	W, H, TitleX int
	Title        string
	Axes         svgAxes
	Guides       []svgGuide
	Lines        []svgSeries
	Bar          bool
	Groups       []svgBarGroup
}

// svgAxes is a chart's grid with tick labels, its two axes and their titles.
type svgAxes struct {
	YTicks, XTicks []svgTick
	XAxis, YAxis   svgLine
	// XLabel is centred at (XLabelX, XLabelY); YLabel, turned, at (14, YLabelY).
	XLabel, YLabel   string
	XLabelX, YLabelY float64
	XLabelY          int
}

// svgTick is a grid line and its label at (X, Y).
type svgTick struct {
	Grid  svgLine
	X, Y  float64
	Label string
}

type svgLine struct{ X1, Y1, X2, Y2 float64 }

// svgGuide is a dashed reference line, with a label ending at (LX, LY) if any.
type svgGuide struct {
	svgLine
	Label  string
	LX, LY float64
}

// svgSeries is one line of a line chart: its points as the SVG attribute wants them.
type svgSeries struct{ Name, Color, Points string }

// svgBarGroup is a category's bars and its label at (X, Y).
type svgBarGroup struct {
	Bars     []svgBar
	Category string
	X, Y     float64
}

// svgBar is one bar and its tooltip.
type svgBar struct {
	X, Y, W, H   float64
	Color, Title string
}

// svg lays the chart out for the "chart" template.
func (c lineChart) svg() svgChart {
	// The x axis spans the data exactly (ticks past it are dropped); the y axis is
	// rounded up to the next tick.
	xt := niceTicks(c.xMin, c.xMax, 7)
	for len(xt) > 2 && xt[len(xt)-1] > c.xMax+1e-9 {
		xt = xt[:len(xt)-1]
	}
	yt := niceTicks(c.yMin, c.yMax, 6)
	f := frame{c.xMin, math.Max(c.xMax, xt[len(xt)-1]), yt[0], yt[len(yt)-1]}
	out := newSVGChart(c.title, axes(f, xt, yt, c.xLabel, c.yLabel))
	for _, g := range c.guides {
		sg := svgGuide{svgLine: svgLine{f.x(g.x1), f.y(g.y1), f.x(g.x2), f.y(g.y2)}, Label: g.label}
		if g.label != "" {
			sg.LX, sg.LY = f.x(g.lx)-6, f.y(g.ly)-6
		}
		out.Guides = append(out.Guides, sg)
	}
	for _, s := range c.series {
		if len(s.xs) == 0 {
			continue
		}
		var pts strings.Builder
		for i := range s.xs {
			x, y := f.x(clamp(s.xs[i], f.xMin, f.xMax)), f.y(clamp(s.ys[i], f.yMin, f.yMax))
			if c.step && i > 0 {
				fmt.Fprintf(&pts, "%.1f,%.1f ", x, f.y(clamp(s.ys[i-1], f.yMin, f.yMax)))
			}
			fmt.Fprintf(&pts, "%.1f,%.1f ", x, y)
		}
		out.Lines = append(out.Lines, svgSeries{Name: s.name, Color: s.color, Points: pts.String()})
	}
	return out
}

// barChart is a grouped bar chart: one group per category, one bar per series.
type barChart struct {
	title, xLabel, yLabel string
	categories            []string
	series                []series // ys[i] is the value for categories[i]
}

// svg lays the chart out for the "chart" template.
func (c barChart) svg() svgChart {
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
	out := newSVGChart(c.title, axes(f, nil, yt, c.xLabel, c.yLabel))
	out.Bar = true
	groupW := f.x(1) - f.x(0)
	barW := groupW * 0.8 / float64(max(len(c.series), 1))
	for i, cat := range c.categories {
		x0 := f.x(float64(i)) + groupW*0.1
		g := svgBarGroup{Category: cat, X: f.x(float64(i) + 0.5), Y: f.y(0) + 16}
		for j, s := range c.series {
			v := s.ys[i]
			top := f.y(v)
			g.Bars = append(g.Bars, svgBar{X: x0 + float64(j)*barW, Y: top, W: math.Max(barW-1, 1), H: f.y(0) - top,
				Color: s.color, Title: fmt.Sprintf("%s %s: %.1f", s.name, cat, v)})
		}
		out.Groups = append(out.Groups, g)
	}
	return out
}

func newSVGChart(title string, a svgAxes) svgChart {
	return svgChart{W: chartW, H: chartH, TitleX: padLeft, Title: title, Axes: a}
}

// axes lays out the grid, tick labels and axis titles; xt nil leaves x ticks to the
// caller.
func axes(f frame, xt, yt []float64, xLabel, yLabel string) svgAxes {
	x0, x1, y0, y1 := f.x(f.xMin), f.x(f.xMax), f.y(f.yMin), f.y(f.yMax)
	a := svgAxes{XAxis: svgLine{x0, y0, x1, y0}, YAxis: svgLine{x0, y0, x0, y1},
		XLabel: xLabel, XLabelX: (x0 + x1) / 2, XLabelY: chartH - 8, YLabel: yLabel, YLabelY: (y0 + y1) / 2}
	for _, v := range yt {
		y := f.y(v)
		a.YTicks = append(a.YTicks, svgTick{Grid: svgLine{x0, y, x1, y}, X: x0 - 6, Y: y + 4, Label: fmtTick(v)})
	}
	for _, v := range xt {
		x := f.x(v)
		a.XTicks = append(a.XTicks, svgTick{Grid: svgLine{x, y0, x, y1}, X: x, Y: y0 + 16, Label: fmtTick(v)})
	}
	return a
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
