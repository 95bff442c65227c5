package main

import (
	"context"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/exitcode"
)

// TestNoDatabaseYetIsOneExitCode (issue 40 item 15): before the first run
// every read command (search, runs, chart, export) exits 4 with one line
// naming the database and what creates it; none exits 0 or 1.
func TestNoDatabaseYetIsOneExitCode(t *testing.T) {
	p := newInproc(t, "", nil)
	ctx := context.Background()
	e := p.engine()
	for name, run := range map[string]func() error{
		"search": func() error { return searchRun(ctx, &searchOptions{io: p.a.ioStreams, engine: e, text: "x", limit: 5}) },
		"runs":   func() error { return runsRun(ctx, &runsOptions{io: p.a.ioStreams, engine: e, limit: 5}) },
		"chart": func() error {
			return chartRun(ctx, &chartOptions{io: p.a.ioStreams, engine: e, region: "US", kind: "chart"})
		},
		"export": func() error {
			return exportRun(ctx, &exportOptions{io: p.a.ioStreams, engine: e, format: "csv", layout: "youtube-new", every: "day"})
		},
	} {
		p.reset()
		err := run()
		if exit(err) != exitcode.NotFound || err == nil || !strings.Contains(err.Error(), "no database at "+p.db+" yet") ||
			!strings.Contains(err.Error(), "`trendfetch run` creates it") {
			t.Errorf("%s without a database: %v (exit %d), want exit %d naming %s", name, err, exit(err), exitcode.NotFound, p.db)
		}
		if p.out.Len() != 0 {
			t.Errorf("%s without a database printed %q", name, p.out.String())
		}
	}
}

// TestNoTablesInANewPostgreSQLDatabase (issue 40 item 15): a PostgreSQL
// database without trendfetch's tables is not called missing: runs says
// it has no tables yet, exit 4 as with no SQLite file.
func TestNoTablesInANewPostgreSQLDatabase(t *testing.T) {
	_, url := pgDatabase(t)
	p := newInproc(t, "", nil)
	*p.a.flags["database"] = url
	if err := p.a.loadConfig(); err != nil {
		t.Fatal(err)
	}
	err := runsRun(context.Background(), &runsOptions{io: p.a.ioStreams, engine: p.engine(), limit: 5})
	if exit(err) != exitcode.NotFound || err == nil || !strings.Contains(err.Error(), "no trendfetch tables in PostgreSQL database") ||
		strings.Contains(err.Error(), "no database at") {
		t.Errorf("runs on a new PostgreSQL database: %v (exit %d), want exit 4 saying it has no tables yet", err, exit(err))
	}
}
