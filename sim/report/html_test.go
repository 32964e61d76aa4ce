package report

import (
	"bytes"
	"strings"
	"testing"
)

// Names from traces, scenarios and configuration files reach the page only escaped,
// in text, attributes and the SVG charts alike.
func TestWriteHTMLEscapesNames(t *testing.T) {
	fill := fillResult(`<script>alert("p")</script>`, 42, 95)
	fill.Trace = `<b>trace</b> "t" & 'u'`
	replay := replayResult(`<img src=x onerror=alert(1)>`, 42, 60)
	replay.Trace = `<i>replay</i>`
	n := len(replay.Replay.Times)
	replay.Replay.Queues = []QueueSeries{{Name: `<q>`, DeservedGPUs: 4, AllocGPUs: make([]float64, n), PendingJobs: make([]int, n)}}
	auto := autoscaledResult(42, 100, 60, 80)
	auto.Policy = `<svg onload=alert(2)>`
	var buf bytes.Buffer
	if err := WriteHTML(&buf, `<h1>title</h1>`, []Result{fill, replay, auto}, nil); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, raw := range []string{"<script", "<b>", "<i>", "<img", "<q>", "<svg onload", "<h1>title", "ZgotmplZ"} {
		if strings.Contains(page, raw) {
			t.Errorf("page contains %q", raw)
		}
	}
	for _, escaped := range []string{"&lt;script&gt;alert(&#34;p&#34;)&lt;/script&gt;", "&lt;b&gt;trace&lt;/b&gt; &#34;t&#34; &amp; &#39;u&#39;",
		"&lt;i&gt;replay&lt;/i&gt;", "Queue &lt;q&gt;: allocated GPUs", "&lt;svg onload=alert(2)&gt;", "<title>&lt;h1&gt;title&lt;/h1&gt;</title>"} {
		if !strings.Contains(page, escaped) {
			t.Errorf("page lacks %q", escaped)
		}
	}
}
