package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ReadMissedSlots registers trendfetch_slots_missed{region}: the slots of the region's schedule
// in the last day in which no run started, read (engine.MissedSlots) at every scrape within the
// scrape timeout; no series while it cannot be read. Call it once, before serving.
func (m *Metrics) ReadMissedSlots(read func(ctx context.Context) (map[string]int, error)) {
	m.reg.MustRegister(&missedSlotsCollector{
		GaugeVec: gauge("slots_missed", "Slots of the region's schedule in the last 24 hours in which no run started (trendfetch coverage).", "region"),
		read:     read, timeout: m.scrapeTimeout})
}

type missedSlotsCollector struct {
	*prometheus.GaugeVec
	read    func(ctx context.Context) (map[string]int, error)
	timeout time.Duration
}

func (c *missedSlotsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	missed, err := c.read(ctx)
	cancel()
	c.Reset()
	if err == nil {
		for region, n := range missed {
			c.WithLabelValues(region).Set(float64(n))
		}
	}
	c.GaugeVec.Collect(ch)
}
