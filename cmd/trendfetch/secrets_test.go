package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
)

// TestSecretsNeverLeak runs trendfetch with an API key (from the
// environment, then from a key file) through runs that succeed, fail, are
// denied and are rejected, at trace log level, and greps every output for
// the key: stdout, stderr, the database files, the quota database, Redis
// keys and values, `quota status` and `runs`.
func TestSecretsNeverLeak(t *testing.T) {
	const key = "AIzaSyD-SECRET-never-leak-0123456789abcd"
	srv := redistest.Start(t)
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	url := emu.StartTest(t)
	e := newEnv(t)
	e.vars["TRENDFETCH_LOG_LEVEL"] = "trace"
	e.vars["TRENDFETCH_REDIS_URL"] = srv.URL()
	keyFile := filepath.Join(e.dir, "key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	denyCfg := e.writeConfig("quota:\n  buckets:\n    - {name: units, limit: 1, window: 1h}\n  costs:\n    videos.list: {units: 1}\n")
	keyFileCfg := filepath.Join(e.dir, "keyfile.yaml")
	if err := os.WriteFile(keyFileCfg, []byte("credentials:\n  - name: proj\n    api_key_env: NOT_SET\n    api_key_file: "+keyFile+"\ncredential: proj\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	var outputs []string
	run := func(withEnvKey bool, args ...string) int {
		if withEnvKey {
			e.vars["YOUTUBE_API_KEY"] = key
		} else {
			delete(e.vars, "YOUTUBE_API_KEY")
		}
		res := e.run(append([]string{"--api-endpoint", url}, args...)...)
		outputs = append(outputs, strings.Join(args, " ")+"\n"+res.stdout+res.stderr)
		return res.code
	}
	expect := func(code, want int, what string) {
		t.Helper()
		if code != want {
			t.Errorf("%s: exit %d, want %d", what, code, want)
		}
	}
	expect(run(true, "run", "--region", "US"), 0, "success")
	expect(run(true, "run", "--region", "ZW"), 1, "videoChartNotFound")
	expect(run(false, "--config", keyFileCfg, "run", "--region", "US"), 0, "key from a file")
	emu.SetKeys("some-other-key")
	expect(run(true, "run", "--region", "US"), 2, "keyInvalid")
	emu.SetKeys()
	expect(run(true, "--config", denyCfg, "--quota-backend", "sqlite", "run", "--region", "US"), 75, "denied")
	if emu.Units(key) < 5 {
		t.Errorf("the emulator saw %d units spent with the key: the runs did not use it", emu.Units(key))
	}
	run(true, "quota", "status")
	run(true, "quota", "status", "--json")
	run(true, "runs", "--json")
	run(true, "runs")
	srv.Kill()
	run(true, "run", "--region", "US") // Redis down: fail-open warning
	srv.Restart()

	for _, out := range outputs {
		if strings.Contains(out, key) {
			t.Errorf("API key in output of: %s", out)
		}
	}
	if !strings.Contains(strings.Join(outputs, ""), "keyInvalid") {
		t.Error("the keyInvalid run did not say why it failed")
	}
	files, _ := filepath.Glob(filepath.Join(e.dir, "data", "trendfetch", "*"))
	if len(files) < 2 {
		t.Fatalf("expected database files, found %v", files)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), key) {
			t.Errorf("API key stored in %s", f)
		}
	}
	// Redis was restarted empty; check a live one after a run.
	run(true, "run", "--region", "US")
	keys := srv.Do("--scan")
	if !strings.Contains(keys, "trendfetch:{default}:") {
		t.Errorf("no trendfetch keys in Redis after a run: %q", keys)
	}
	for _, k := range strings.Fields(keys) {
		val := srv.Do("--no-raw", "DUMP", k)
		if strings.Contains(k, key) || strings.Contains(val, key) {
			t.Errorf("API key in Redis key %q or its value", k)
		}
	}
}
