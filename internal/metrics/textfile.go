package metrics

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
)

// TextfileName is the file of region in node_exporter's textfile collector
// directory: one file per region, so concurrent cron runs of different
// regions never write the same file.
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

// WriteTextfile writes m's metrics of region to path atomically (a temp
// file in the same directory, then rename, mode 0644) for node_exporter's
// textfile collector, which refuses a series found in two files: each
// region has its file, a series of another region (a region label with
// another value, e.g. the last success read from the database) is left
// out, and every other series gets the label region: aggregate the quota
// gauges with max(), not sum(). Histograms are left out: one run's
// observations are not a distribution and cannot be carried over.
func (m *Metrics) WriteTextfile(path, region string) error {
	return prometheus.WriteToTextfile(path, prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
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
}
