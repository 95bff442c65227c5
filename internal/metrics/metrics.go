// Package metrics exposes trendfetch's Prometheus metrics (docs/operations.md
// "Metrics"), served by the scheduler or written to node_exporter's textfile
// collector, from a private registry: no Go runtime or process metrics.
package metrics

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"

	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/serve"
	"github.com/trendfetch/trendfetch/internal/store"
)

// Namespace prefixes every metric name.
const Namespace = "trendfetch"

// StatusReader reads a credential's quota state; *quota.Limiter is one.
type StatusReader interface {
	Status(ctx context.Context, credential string) quota.Status
}

// Metrics holds the collectors. Its methods are safe for concurrent use.
type Metrics struct {
	reg           *prometheus.Registry
	scrapeTimeout time.Duration

	runs        *prometheus.CounterVec
	runDuration *prometheus.HistogramVec
	lastSuccess *prometheus.GaugeVec
	units       *prometheus.CounterVec
	unmetered   *prometheus.CounterVec
	calls       *prometheus.CounterVec
	callLatency *prometheus.HistogramVec
}

// counter and gauge make the metric Namespace_name.
func counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
}

func gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, labels)
}

// New registers the collectors. quotaReader (nil: no quota metrics) is
// asked for each of credentials at every scrape, with scrapeTimeout
// (default 5s) per credential. The per-region series of regions start at 0.
func New(quotaReader StatusReader, credentials, regions []string, scrapeTimeout time.Duration) *Metrics {
	if scrapeTimeout <= 0 {
		scrapeTimeout = 5 * time.Second
	}
	m := &Metrics{
		reg:           prometheus.NewRegistry(),
		scrapeTimeout: scrapeTimeout,
		runs: counter("runs_total",
			"Finished region runs by outcome (success, success_unmetered, denied, failed, interrupted).", "region", "outcome"),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "run_duration_seconds",
			Help:    "Duration of finished region runs, start to finish, in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14), // 50ms .. ~7min
		}, []string{"region"}),
		lastSuccess: gauge("last_success_timestamp_seconds",
			"Unix time at which a run of the region last finished successfully (0: never).", "region"),
		units: counter("units_spent_total",
			"Quota units reserved by finished runs, per credential and bucket.", "credential", "bucket"),
		unmetered: counter("unmetered_calls_total",
			"API calls sent fail-open while the quota backend was unreachable.", "credential"),
		calls: counter("api_calls_total",
			"YouTube Data API calls sent, by method (call site) and HTTP status (0: no answer).", "method", "status"),
		callLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "api_call_duration_seconds",
			Help:    "Latency of YouTube Data API calls in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 12), // 10ms .. ~20s
		}, []string{"method"}),
	}
	m.reg.MustRegister(m.runs, m.runDuration, m.lastSuccess, m.units, m.unmetered, m.calls, m.callLatency)
	if quotaReader != nil {
		m.reg.MustRegister(&quotaCollector{reader: quotaReader, credentials: credentials, timeout: scrapeTimeout})
	}
	for _, r := range regions { // at 0, so that rates and alerts see a 0 before the first event
		for _, o := range []store.Outcome{store.OutcomeSuccess, store.OutcomeSuccessUnmetered, store.OutcomeDenied,
			store.OutcomeFailed, store.OutcomeInterrupted} {
			m.runs.WithLabelValues(r, string(o))
		}
		m.lastSuccess.WithLabelValues(r)
		m.runDuration.WithLabelValues(r)
	}
	return m
}

// SetBuildInfo registers trendfetch_build_info{version,goversion} = 1. Call it once.
func (m *Metrics) SetBuildInfo(version, goVersion string) {
	g := gauge("build_info",
		"Always 1; the labels name the trendfetch version and the Go version that built it.", "version", "goversion")
	g.WithLabelValues(version, goVersion).Set(1)
	m.reg.MustRegister(g)
}

// ZeroSeries creates, at 0, the series whose labels are known before any event: units spent and
// unmetered calls per credential (and bucket), API calls per method with status 200.
func (m *Metrics) ZeroSeries(credentials, buckets, methods []string) {
	for _, c := range credentials {
		m.unmetered.WithLabelValues(c)
		for _, b := range buckets {
			m.units.WithLabelValues(c, b)
		}
	}
	for _, meth := range methods {
		m.calls.WithLabelValues(meth, "200")
		m.callLatency.WithLabelValues(meth)
	}
}

// ReadLastSuccess makes trendfetch_last_success_timestamp_seconds the later of
// read's (store.LastSuccess, called at every scrape within the scrape timeout)
// and ObserveRun's. Call it once, before serving.
func (m *Metrics) ReadLastSuccess(read func(ctx context.Context) (map[string]time.Time, error)) {
	m.reg.Unregister(m.lastSuccess)
	m.reg.MustRegister(&lastSuccessCollector{GaugeVec: m.lastSuccess, read: read, timeout: m.scrapeTimeout})
}

type lastSuccessCollector struct {
	*prometheus.GaugeVec
	read    func(ctx context.Context) (map[string]time.Time, error)
	timeout time.Duration
}

func (c *lastSuccessCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	last, err := c.read(ctx)
	cancel()
	if err == nil {
		for region, at := range last {
			g := c.WithLabelValues(region)
			if v := float64(at.UnixNano()) / 1e9; v > gaugeValue(g) {
				g.Set(v)
			}
		}
	}
	c.GaugeVec.Collect(ch)
}

// gaugeValue reads a gauge's current value.
func gaugeValue(g prometheus.Gauge) float64 {
	var pb dto.Metric
	if g.Write(&pb) != nil || pb.Gauge == nil {
		return 0
	}
	return pb.Gauge.GetValue()
}

// ObserveCall records one API call (fetch.Runner.OnCall): status is the
// HTTP status, 0 when no answer arrived.
func (m *Metrics) ObserveCall(method string, status int, latency time.Duration) {
	m.calls.WithLabelValues(method, strconv.Itoa(status)).Inc()
	m.callLatency.WithLabelValues(method).Observe(latency.Seconds())
}

// ObserveRun records a finished run (fetch.Runner.OnRun): its outcome,
// duration, units, unmetered calls and, on success, the last success.
func (m *Metrics) ObserveRun(run store.Run) {
	m.runs.WithLabelValues(run.Region, string(run.Outcome)).Inc()
	if !run.FinishedAt.IsZero() && !run.StartedAt.IsZero() {
		m.runDuration.WithLabelValues(run.Region).Observe(run.FinishedAt.Sub(run.StartedAt).Seconds())
	}
	for bucket, u := range run.Units {
		if u > 0 {
			m.units.WithLabelValues(run.Credential, bucket).Add(float64(u))
		}
	}
	if run.Unmetered > 0 {
		m.unmetered.WithLabelValues(run.Credential).Add(float64(run.Unmetered))
	}
	if run.Outcome == store.OutcomeSuccess {
		m.lastSuccess.WithLabelValues(run.Region).Set(float64(run.FinishedAt.UnixNano()) / 1e9)
	}
}

// Handler serves GET /metrics (Prometheus text format, or OpenMetrics when
// asked) and GET /healthz (200, serve.Health); other paths are 404.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		serve.WriteHealth(w, nil) // the same shape as serve's /healthz
	})
	return mux
}

// quotaCollector reads the limiter at scrape time: the shared backend's
// figures, not this process's own.
type quotaCollector struct {
	reader      StatusReader
	credentials []string
	timeout     time.Duration
}

var (
	labelsCB     = []string{"credential", "bucket"}
	descUsed     = prometheus.NewDesc(Namespace+"_quota_used_units", "Quota units used in the bucket's current window (sliding window, or the Pacific day for a calendar bucket).", labelsCB, nil)
	descRemain   = prometheus.NewDesc(Namespace+"_quota_remaining_units", "Quota units left in the bucket's current window (limit - used, never below 0).", labelsCB, nil)
	descLimit    = prometheus.NewDesc(Namespace+"_quota_limit_units", "The bucket's limit in quota units per window.", labelsCB, nil)
	descWindow   = prometheus.NewDesc(Namespace+"_quota_window_seconds", "The bucket's sliding window in seconds (0 for a calendar bucket: the Pacific day).", labelsCB, nil)
	descToday    = prometheus.NewDesc(Namespace+"_quota_used_today_units", "Quota units recorded in the bucket since the last Pacific midnight (Google's quota day).", labelsCB, nil)
	descUp       = prometheus.NewDesc(Namespace+"_quota_backend_up", "1 when the quota backend answered the status query at this scrape, else 0.", []string{"credential", "backend"}, nil)
	descExhaust  = prometheus.NewDesc(Namespace+"_quota_exhausted_until_timestamp_seconds", "Unix time until which the credential is marked exhausted after a 403 quotaExceeded (0: not marked).", []string{"credential"}, nil)
	descShadow   = prometheus.NewDesc(Namespace+"_quota_shadow_denials_today", "Admitted calls a shadow bucket would have denied since the last Pacific midnight, per call site.", []string{"credential", "bucket", "call_site"}, nil)
	quotaMetrics = []*prometheus.Desc{descUsed, descRemain, descLimit, descWindow, descToday, descUp, descExhaust, descShadow}
)

func (c *quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range quotaMetrics {
		ch <- d
	}
}

func (c *quotaCollector) Collect(ch chan<- prometheus.Metric) {
	for _, cred := range c.credentials {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		st := c.reader.Status(ctx, cred)
		cancel()
		up := 0.0
		if st.Reachable {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up, cred, st.Backend)
		if !st.Reachable {
			continue
		}
		exhausted := 0.0
		if !st.ExhaustedUntil().IsZero() {
			exhausted = float64(st.ExhaustedUntil().UnixNano()) / 1e9
		}
		ch <- prometheus.MustNewConstMetric(descExhaust, prometheus.GaugeValue, exhausted, cred)
		for _, b := range st.Buckets {
			window := b.Window.Seconds()
			if b.Calendar {
				window = 0
			}
			ch <- prometheus.MustNewConstMetric(descUsed, prometheus.GaugeValue, float64(b.Used), cred, b.Name)
			ch <- prometheus.MustNewConstMetric(descRemain, prometheus.GaugeValue, float64(b.Remaining), cred, b.Name)
			ch <- prometheus.MustNewConstMetric(descLimit, prometheus.GaugeValue, float64(b.Limit), cred, b.Name)
			ch <- prometheus.MustNewConstMetric(descWindow, prometheus.GaugeValue, window, cred, b.Name)
			ch <- prometheus.MustNewConstMetric(descToday, prometheus.GaugeValue, float64(b.UsedToday), cred, b.Name)
			for site, n := range b.ShadowDenials {
				ch <- prometheus.MustNewConstMetric(descShadow, prometheus.GaugeValue, float64(n), cred, b.Name, site)
			}
		}
	}
}

// TextfileName is the file of region in node_exporter's textfile collector directory: one file per
// region, so concurrent cron runs of different regions never write the same file.
func TextfileName(dir, region string) string {
	return filepath.Join(dir, "trendfetch_"+region+".prom")
}

// CarryCounters adds the counters of an earlier textfile at path (written by
// WriteTextfile) to m, so a region's counters keep counting across cron
// runs as one long-lived process's would. A missing file carries nothing.
func (m *Metrics) CarryCounters(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(f)
	if err != nil {
		return fmt.Errorf("metrics textfile %s: %w", path, err)
	}
	for name, vec := range map[string]*prometheus.CounterVec{
		Namespace + "_runs_total":            m.runs,
		Namespace + "_units_spent_total":     m.units,
		Namespace + "_unmetered_calls_total": m.unmetered,
		Namespace + "_api_calls_total":       m.calls,
	} {
		mf := families[name]
		if mf == nil || mf.GetType() != dto.MetricType_COUNTER {
			continue
		}
		for _, metric := range mf.Metric {
			labels := prometheus.Labels{}
			for _, l := range metric.Label {
				labels[l.GetName()] = l.GetValue()
			}
			c, err := vec.GetMetricWith(labels)
			if err != nil { // the region label WriteTextfile added
				delete(labels, "region")
				c, err = vec.GetMetricWith(labels)
			}
			if err != nil {
				continue // labels of another version: start again at 0
			}
			c.Add(metric.GetCounter().GetValue())
		}
	}
	return nil
}

// WriteTextfile writes m's metrics of region to path atomically (mode 0644)
// for node_exporter's textfile collector (docs/operations.md "Metrics"): no
// other region's series, the label region on every other, no histograms.
// Errors name path's directory and what to do, never the temporary file.
func (m *Metrics) WriteTextfile(path, region string) error {
	if err := checkTextfileDir(filepath.Dir(path)); err != nil {
		return err
	}
	err := prometheus.WriteToTextfile(path, prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := m.reg.Gather()
		out := mfs[:0]
		for _, mf := range mfs {
			if mf.GetType() == dto.MetricType_HISTOGRAM {
				continue
			}
			mf.Metric = slices.DeleteFunc(mf.Metric, func(metric *dto.Metric) bool {
				i := slices.IndexFunc(metric.Label, func(l *dto.LabelPair) bool { return l.GetName() == "region" })
				if i >= 0 {
					return metric.Label[i].GetValue() != region
				}
				metric.Label = append(metric.Label, &dto.LabelPair{Name: proto.String("region"), Value: proto.String(region)})
				slices.SortFunc(metric.Label, func(a, b *dto.LabelPair) int { return cmp.Compare(a.GetName(), b.GetName()) })
				return false
			})
			if len(mf.Metric) > 0 {
				out = append(out, mf)
			}
		}
		return out, err
	}))
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) { // pe.Path is the temporary file
		return fmt.Errorf("metrics textfile %s: %s: %w", path, pe.Op, pe.Err)
	}
	return err
}

// checkTextfileDir refuses a textfile directory that is missing or not a
// directory, with the fix: node_exporter reads a directory that exists.
func checkTextfileDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("metrics textfile directory %s does not exist: create it (node_exporter's --collector.textfile.directory) or set --metrics-textfile / runs.metrics_textfile to the one it reads", dir)
	case err != nil:
		return fmt.Errorf("metrics textfile directory %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("metrics textfile directory %s is not a directory: set --metrics-textfile / runs.metrics_textfile to node_exporter's --collector.textfile.directory", dir)
	}
	return nil
}
