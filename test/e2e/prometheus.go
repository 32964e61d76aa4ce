package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// startPrometheus runs Debian's Prometheus on 127.0.0.1, scraping every Tessera
// component every 2 s and evaluating deploy/'s alerting rules as often.
func (c *Cluster) startPrometheus(ctx context.Context, root string) error {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		return fmt.Errorf("prometheus is not installed (Debian package prometheus; hack/ensure-promtool.sh installs it): %w", err)
	}
	dir := filepath.Join(c.Dir, "prometheus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rules, err := filepath.Glob(filepath.Join(root, "deploy", "helm", "tessera", "files", "prometheus", "*.rules.yaml"))
	if err != nil || len(rules) == 0 {
		return fmt.Errorf("no rule files under deploy/helm/tessera/files/prometheus: %v", err)
	}
	quoted := make([]string, len(rules))
	for i, r := range rules {
		quoted[i] = strconv.Quote(r)
	}
	config := fmt.Sprintf(`global: {scrape_interval: 2s, evaluation_interval: 2s}
rule_files: [%s]
scrape_configs:
- job_name: tessera
  honor_labels: true
  file_sd_configs: [{files: [%q, %q], refresh_interval: 2s}]
`, strings.Join(quoted, ", "), filepath.Join(dir, "components.json"), filepath.Join(dir, "agents.json"))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		return err
	}
	for _, f := range []string{"components.json", "agents.json"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("[]"), 0o644); err != nil {
			return err
		}
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort())
	if _, err := c.run("prometheus", bin, []string{
		"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr,
	}); err != nil {
		return err
	}
	c.Prometheus = "http://" + addr
	return poll(ctx, time.Minute, "Prometheus ready", func() error { return httpOK(c.Prometheus + "/-/ready") })
}

// scrapeTarget is one entry of a Prometheus file_sd file.
type scrapeTarget struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// addScrapeTarget adds a component's metrics endpoint to components.json.
func (c *Cluster) addScrapeTarget(component string, port int) error {
	path := filepath.Join(c.Dir, "prometheus", "components.json")
	var targets []scrapeTarget
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &targets)
	}
	targets = append(targets, scrapeTarget{Targets: []string{"127.0.0.1:" + strconv.Itoa(port)}, Labels: map[string]string{"component": component}})
	return writeJSON(path, targets)
}

// writeAgentTargets writes the running node agents into agents.json.
func (c *Cluster) writeAgentTargets() error {
	c.mu.Lock()
	targets := []scrapeTarget{}
	for _, node := range slices.Sorted(maps.Keys(c.agentPorts)) {
		targets = append(targets, scrapeTarget{
			Targets: []string{"127.0.0.1:" + strconv.Itoa(c.agentPorts[node])},
			Labels:  map[string]string{"component": "tessera-node-agent", "node": node},
		})
	}
	c.mu.Unlock()
	return writeJSON(filepath.Join(c.Dir, "prometheus", "agents.json"), targets)
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// Alert is a firing or pending alert as Prometheus's API reports it.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
}

// Alerts returns the alerts Prometheus has now.
func (c *Cluster) Alerts(ctx context.Context) ([]Alert, error) {
	var resp struct {
		Data struct {
			Alerts []Alert `json:"alerts"`
		} `json:"data"`
	}
	return resp.Data.Alerts, c.prometheusGet(ctx, "/api/v1/alerts", &resp)
}

// Query evaluates an instant PromQL query and returns each series' value by its labels
// formatted as {k="v",...}.
func (c *Cluster) Query(ctx context.Context, q string) (map[string]float64, error) {
	var resp struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := c.prometheusGet(ctx, "/api/v1/query?query="+url.QueryEscape(q), &resp); err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, r := range resp.Data.Result {
		s, _ := r.Value[1].(string)
		v, _ := strconv.ParseFloat(s, 64)
		out[fmt.Sprint(r.Metric)] = v
	}
	return out, nil
}

func (c *Cluster) prometheusGet(ctx context.Context, path string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Prometheus+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("prometheus %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(into)
}
