package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/exitcode"
)

// TestQuotaCheck: `quota check` answers whether N calls fit now (exit 0),
// when they will (exit 75, an exact time when the status knows it) or that
// they never can (exit 2), and reserves nothing; `quota charge` counts calls
// made by hand, up to the first denial (exit 75); `quota reset` of the
// --credential given forgets them, confirmed by --yes.
func TestQuotaCheck(t *testing.T) {
	p := newInproc(t, "", nil)
	ctx := context.Background()
	quota := func(run func(context.Context, *quotaOptions) error, o quotaOptions) error {
		p.reset()
		o.io, o.engine, o.cfg = p.a.ioStreams, p.engine(), p.a.cfg
		return run(ctx, &o)
	}
	if err := quota(quotaCheckRun, quotaOptions{method: "search.list", count: 3}); err != nil || !strings.Contains(p.out.String(), "3 search.list calls fit now") {
		t.Fatalf("empty quota: %v, want fit now\n%s", err, p.out.String())
	}
	if err := quota(quotaChargeRun, quotaOptions{method: "search.list", count: 95}); err != nil || p.out.String() != "charged 95 search.list calls to credential default\n" {
		t.Fatalf("charge after a check of 3 (which reserves nothing): %v %q", err, p.out.String())
	}
	err := quota(quotaCheckRun, quotaOptions{method: "search.list", count: 1, asJSON: true})
	var out engine.CheckResult
	if exit(err) != exitcode.TempFail || json.Unmarshal(p.out.Bytes(), &out) != nil {
		t.Fatalf("search bucket full: %v (exit %d), want 75\n%s", err, exit(err), p.out.String())
	}
	if out.Fits || out.FitsAt == nil || out.FitsBy == nil || !out.FitsAt.Equal(*out.FitsBy) {
		t.Errorf("check = %+v, want not fitting, at an exact time", out)
	} else if d := time.Until(*out.FitsAt); d < 23*time.Hour || d > 24*time.Hour+time.Minute {
		t.Errorf("fits at %s, want about 24h from now (the window)", out.FitsAt)
	}
	if err := quota(quotaChargeRun, quotaOptions{method: "search.list", count: 1}); exit(err) != exitcode.TempFail || p.out.String() != "charged 0 of 1 search.list calls\n" {
		t.Errorf("a denied charge: %v %q, want exit 75 and 0 of 1 charged", err, p.out.String())
	}
	if err := quota(quotaCheckRun, quotaOptions{method: "videos.list", count: 99999}); exit(err) != exitcode.Usage || !strings.Contains(p.out.String(), "never fit") {
		t.Errorf("more than the limit: %v (exit %d), want 2\n%s", err, exit(err), p.out.String())
	}
	for _, o := range []quotaOptions{{method: "search", count: 1}, {method: "videos.list", count: 0}} {
		if err := quota(quotaCheckRun, o); exit(err) != exitcode.Usage || !strings.Contains(err.Error(), "--") {
			t.Errorf("quota check %+v: %v, want a usage error", o, err)
		}
	}
	if err := p.execute("quota", "charge"); exit(err) != exitcode.Usage {
		t.Errorf("quota charge without --method: %v, want a usage error", err)
	}
	for _, o := range []quotaOptions{{yes: true}, {credential: "default"}} {
		if err := quota(quotaResetRun, o); exit(err) != exitcode.Usage {
			t.Errorf("quota reset %+v: %v, want a usage error", o, err)
		}
	}
	if err := quota(quotaResetRun, quotaOptions{credential: "default", yes: true}); err != nil ||
		quota(quotaCheckRun, quotaOptions{method: "search.list", count: 95}) != nil {
		t.Errorf("quota reset: %v, then 95 calls do not fit\n%s", err, p.out.String())
	}
}
