package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/quota"
)

// TestQuotaStatusEscapesUpstreamText (issue 40 item 4): an upstream answer's
// text kept in a mark (ESC, BEL, a title-change sequence) reaches `quota
// status` made safe for a terminal, as `runs` shows a reason.
func TestQuotaStatusEscapesUpstreamText(t *testing.T) {
	p := newInproc(t, "", nil)
	ctx := context.Background()
	l, err := p.engine().OpenLimiter(false)
	if err != nil {
		t.Fatal(err)
	}
	hostile := "quotaExceeded \x1b]0;pwned\x07 \x1b[2J done"
	if err := l.MarkExhausted(ctx, p.a.cfg.Credential, quota.Mark{Until: time.Now().Add(time.Hour), Why: hostile}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	err = quotaStatusRun(ctx, &quotaStatusOptions{io: p.a.ioStreams, engine: p.engine(), credential: p.a.cfg.Credential, preset: "default"})
	out := p.out.String()
	if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, "quotaExceeded") || !strings.Contains(out, "done") {
		t.Errorf("quota status (%v) shows the upstream text raw or not at all: %q", err, out)
	}
}
