package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyFileKeepsTheDefaultKeyEnv (issue 40 item 9): a credential that
// sets only api_key_file still reads $YOUTUBE_API_KEY first (the documented
// default of api_key_env), so a CronJob can give the key from its Secret.
func TestKeyFileKeepsTheDefaultKeyEnv(t *testing.T) {
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parse(strings.NewReader("credentials:\n  - name: default\n    api_key_file: " + file + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	cr := c.Credentials[0]
	if cr.KeyEnv != DefaultKeyEnv || cr.KeyFile != file {
		t.Fatalf("credential %+v, want api_key_env %s kept beside api_key_file", cr, DefaultKeyEnv)
	}
	if k, err := cr.APIKey(envOf(map[string]string{DefaultKeyEnv: "from-env"})); err != nil || k != "from-env" {
		t.Errorf("APIKey = %q, %v: want $%s first", k, err, DefaultKeyEnv)
	}
	if k, err := cr.APIKey(noEnv); err != nil || k != "from-file" {
		t.Errorf("APIKey without the variable = %q, %v: want the file's", k, err)
	}
}

// TestNoAPIKeyNamesEveryWay (issue 40 item 16): the "no API key" error
// names api_key_file, the way the README recommends for cron, beside the
// variable and the systemd credential.
func TestNoAPIKeyNamesEveryWay(t *testing.T) {
	_, err := Default().Credentials[0].APIKey(noEnv)
	if !errors.Is(err, ErrNoAPIKey) {
		t.Fatalf("err = %v, want ErrNoAPIKey", err)
	}
	for _, want := range []string{"$" + DefaultKeyEnv, "credentials[default].api_key_file", "youtube-api-key-default"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// TestCheckinURLNamedAsItCanBeSet (issue 40 item 8): the check-in URL is
// set by TRENDFETCH_CHECKIN_URL or runs.checkin_url_file, never by a
// runs.checkin_url key, which the file refuses: its error names the two,
// and no doc tells to set a secret setting's key.
func TestCheckinURLNamedAsItCanBeSet(t *testing.T) {
	c := Default()
	c.Runs.CheckinURL = "ftp://hc.example/ping/x"
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "TRENDFETCH_CHECKIN_URL") || !strings.Contains(err.Error(), "runs.checkin_url_file") {
		t.Errorf("err = %v, want TRENDFETCH_CHECKIN_URL and runs.checkin_url_file named", err)
	}
	if _, err := parse(strings.NewReader("runs:\n  checkin_url: https://hc.example/ping/x\n")); err == nil {
		t.Fatal("runs.checkin_url in the file accepted")
	}
	docs, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	for _, doc := range append(docs, filepath.Join("..", "..", "README.md")) {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range Settings() {
			if s.Secret != "" && strings.Contains(string(raw), "`"+s.Key+"`") {
				t.Errorf("%s names `%s`, which the file refuses: name %s or %s", doc, s.Key, s.Env, s.Secret)
			}
		}
	}
}
