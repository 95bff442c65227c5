package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/secret"
)

// TestListenServeScrubsTheToken: the token ListenServe reads joins
// Options.Secrets, so nothing the process prints or stores shows it.
func TestListenServeScrubsTheToken(t *testing.T) {
	e, _, _ := newTestEngine(t, "", "US")
	e.o.Secrets = &secret.Set{}
	token := "serve-token-0123456789abcdef"
	e.cfg.Serve.Addr, e.cfg.Serve.TokenFile = "127.0.0.1:0", filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(e.cfg.Serve.TokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, got, err := e.ListenServe()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if got != token {
		t.Fatalf("token %q, want %q", got, token)
	}
	if s := e.o.Secrets.String("Authorization: Bearer " + token); strings.Contains(s, token) {
		t.Errorf("the serve token is not scrubbed: %q", s)
	}
}
