package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// mdRows returns the rows of the pipe tables of a markdown document, cells unescaped
// and unmarked, the alignment rows left out; it fails on a row whose cell count is
// not its header's.
func mdRows(t *testing.T, md string) [][]string {
	t.Helper()
	var rows [][]string
	width := 0
	for _, l := range strings.Split(md, "\n") {
		if !strings.HasPrefix(l, "|") {
			width = 0
			continue
		}
		if strings.HasPrefix(l, "|---") {
			if l != "|---"+strings.Repeat("|---:", width-1)+"|" {
				t.Errorf("alignment row %q for %d columns", l, width)
			}
			continue
		}
		if !strings.HasPrefix(l, "| ") || !strings.HasSuffix(l, " |") {
			t.Errorf("row %q", l)
			continue
		}
		cells := regexp.MustCompile(` \| `).Split(strings.ReplaceAll(l[2:len(l)-2], `\|`, "\x00"), -1)
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(c, "**"), "**"), "\x00", "|")
		}
		if width == 0 {
			width = len(cells)
		} else if len(cells) != width {
			t.Errorf("row %q has %d cells, its header %d", l, len(cells), width)
		}
		rows = append(rows, cells)
	}
	return rows
}

// sameTables checks that the markdown has the terminal table's tables: its rows, in
// order, are rows of the terminal table (cells two or more spaces apart), and it has
// as many rows.
func sameTables(t *testing.T, text, md string) {
	t.Helper()
	rows := mdRows(t, md)
	lines := strings.Split(text, "\n")
	sep := regexp.MustCompile(`\s{2,}`)
	at, textRows := 0, 0
	for _, l := range lines {
		if strings.Count(l, "  ") > 0 && len(sep.Split(strings.TrimSpace(l), -1)) > 1 {
			textRows++
		}
	}
	for _, r := range rows {
		found := false
		for ; at < len(lines); at++ {
			if strings.Join(sep.Split(strings.TrimSpace(lines[at]), -1), "\x00") == strings.Join(r, "\x00") {
				found, at = true, at+1
				break
			}
		}
		if !found {
			t.Errorf("markdown row %q is not a row of the terminal table (in order):\n%s", r, text)
			return
		}
	}
	if len(rows) != textRows {
		t.Errorf("markdown has %d table rows, the terminal table %d:\n%s\n%s", len(rows), textRows, md, text)
	}
}

func TestWriteMarkdown(t *testing.T) {
	rs := sampleResults()
	var text, md bytes.Buffer
	if err := WriteTable(&text, rs, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, rs, nil); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	sameTables(t, text.String(), out)
	for _, want := range []string{
		"**openb_pod_list_default.csv — fill-up, 3 seeds**\n\ntessera leaves 5.9% of GPUs unallocated",
		"\n\n| policy | runs | unalloc% @100 | alloc% @50 | @90 | @100 | @130 | frag% @90 | wall s |\n|---|---:|",
		"\n\n" + fillKey + "\n\n",
		"**operator — replay, 2 seeds**\n\n| policy | runs | mean alloc% |",
		"\n\n" + replayKey + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
	if !strings.HasSuffix(out, "\n") || strings.HasSuffix(out, "\n\n") {
		t.Errorf("markdown should end with one newline: %q", out[max(0, len(out)-20):])
	}
	// One trace of fill-up runs: no table across traces, nothing folded.
	if strings.Contains(out, "<details>") || strings.Contains(out, "by trace") {
		t.Errorf("a table across traces for one trace:\n%s", out)
	}
}

// Autoscaled replays: the autoscaling table is in the markdown too, a | in a cell
// escaped.
func TestWriteMarkdownSavingsAndEscapes(t *testing.T) {
	r := autoscaledResult(42, 100, 60, 80)
	r.Policy = "a|b"
	var text, md bytes.Buffer
	WriteTable(&text, []Result{r}, nil)
	if err := WriteMarkdown(&md, []Result{r}, nil); err != nil {
		t.Fatal(err)
	}
	sameTables(t, text.String(), md.String())
	for _, want := range []string{"autoscaling, against the same jobs on the always-on cluster:\n\n| scheduler | autoscaler | runs | GPU-node-h |", `| a\|b | always-on | 1 |`, "| a\\|b | ca | 1 | 80.0 | 20.0 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// Fill-up runs of several traces: a table across traces, the published figure in
// brackets and its own column, the lowest of a row in bold in markdown; the traces'
// own tables are folded in markdown.
func TestTablesAcrossTraces(t *testing.T) {
	var rs []Result
	for i, trace := range []string{"openb-default", "openb-cpu050"} {
		for seed := int64(42); seed < 44; seed++ {
			for j, p := range []string{"bestfit", "fgd", "tessera"} {
				r := fillResult(p, seed, 92+float64(j)*2-float64(i))
				r.Trace = trace
				if p != "tessera" {
					r.PublishedUnallocatedPctAt100 = ptr(float64(7 - 2*j))
				}
				r.OfflineUnallocatedPctAt100 = 4
				rs = append(rs, r)
			}
		}
	}
	rs = append(rs, replayResult("tessera", 42, 70))
	var text, md bytes.Buffer
	if err := WriteTable(&text, rs, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, rs, nil); err != nil {
		t.Fatal(err)
	}
	sameTables(t, text.String(), md.String())
	ss := Summarize(rs)
	cell := func(s Summary) string { return strings.TrimSpace(pmOpt(s.MeanUnallocatedPctAt100, ptr(0), 1)) }
	wantRow := "| openb-default | " + cell(ss[0]) + " (7.00) | " + cell(ss[1]) + " (5.00) | **" + cell(ss[2]) + "** | 4.00 |"
	for _, want := range []string{
		"<details><summary>Each trace: every column</summary>\n\n**openb-default — fill-up, 2 seeds**",
		"| policy | runs | unalloc% @100 | published @100 | alloc% @50 |",
		"| tessera | 2 | ", " | – | ",
		publishedKey,
		"</details>\n\n**unalloc% @100 by trace: GPUs unallocated at 100% arrived, %, mean over 2 seeds (lower is better)**\n\n" + acrossPublishedKey + "\n\n| trace | bestfit | fgd | tessera | offline reference |",
		wantRow,
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if strings.Contains(text.String(), "**") || strings.Contains(text.String(), "<details>") {
		t.Errorf("markdown in the terminal table:\n%s", text.String())
	}
	if !strings.Contains(text.String(), "openb-cpu050 ") || !strings.Contains(text.String(), "unalloc% @100 by trace") {
		t.Errorf("terminal table lacks the table across traces:\n%s", text.String())
	}
}
