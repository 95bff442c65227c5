package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/engine"
)

// TestQuotaCheck: `quota check` answers whether N calls fit now (exit 0),
// when they will (exit 75, an exact time when the status knows it) or that
// they never can (exit 2), and reserves nothing.
func TestQuotaCheck(t *testing.T) {
	e := newEnv(t)
	res := e.run("quota", "check", "--method", "search.list", "--count", "3")
	if res.code != 0 || !strings.Contains(res.stdout, "3 search.list calls fit now") {
		t.Fatalf("empty quota: exit %d, want 0 and fit now\n%s%s", res.code, res.stdout, res.stderr)
	}
	if res = e.run("quota", "charge", "--method", "search.list", "--count", "95"); res.code != 0 {
		t.Fatalf("charge: exit %d\n%s", res.code, res.stderr)
	}
	status := func() string {
		var st struct {
			Buckets []struct {
				Name string `json:"name"`
				Used int64  `json:"used"`
			} `json:"buckets"`
		}
		if err := json.Unmarshal([]byte(e.run("quota", "status", "--json").stdout), &st); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(st.Buckets)
	}
	before := status()
	res = e.run("quota", "check", "--method", "search.list", "--json")
	if res.code != 75 {
		t.Fatalf("search bucket full: exit %d, want 75\n%s%s", res.code, res.stdout, res.stderr)
	}
	var out engine.CheckResult
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Fits || out.FitsAt == nil || out.FitsBy == nil || !out.FitsAt.Equal(*out.FitsBy) {
		t.Errorf("check = %+v, want not fitting, at an exact time", out)
	} else if d := time.Until(*out.FitsAt); d < 23*time.Hour || d > 24*time.Hour+time.Minute {
		t.Errorf("fits at %s, want about 24h from now (the window)", out.FitsAt)
	}
	if after := status(); after != before {
		t.Errorf("quota check changed the status:\n%s\n%s", before, after)
	}
	if res = e.run("quota", "check", "--method", "videos.list", "--count", "99999"); res.code != 2 || !strings.Contains(res.stdout, "never fit") {
		t.Errorf("more than the limit: exit %d, want 2\n%s%s", res.code, res.stdout, res.stderr)
	}
	if res = e.run("quota", "charge"); res.code != 2 {
		t.Errorf("quota charge without --method: exit %d, want 2\n%s", res.code, res.stderr)
	}
}
