package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cronEntry is one command line of a crontab with the environment cron gives it: the
// NAME=value lines above it (crontab(5)).
type cronEntry struct {
	Schedule, Command string
	Env               []string
}

// parseCrontab reads a crontab as cron does: comments and blank lines skipped, NAME=value
// lines setting the environment of every entry below them, entries of five fields and a
// command.
func parseCrontab(t *testing.T, text string) (comments []string, entries []cronEntry) {
	t.Helper()
	var env []string
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
		case strings.HasPrefix(fields[0], "#"):
			comments = append(comments, line)
		case strings.Contains(fields[0], "=") && !strings.ContainsAny(fields[0][:1], "*0123456789@"):
			env = append(env, line)
		case len(fields) > 5:
			cmd := strings.TrimSpace(line)
			for range 5 {
				cmd = strings.TrimSpace(cmd[strings.IndexByte(cmd, ' '):])
			}
			entries = append(entries, cronEntry{strings.Join(fields[:5], " "), cmd, slices.Clone(env)})
		default:
			t.Fatalf("not a crontab line: %q", line)
		}
	}
	return comments, entries
}

// run runs the entry's command as cron would: "\%" is "%", an unescaped "%" ends the command
// (crontab(5)); sh -c with only the entry's environment.
func (e cronEntry) run(t *testing.T) {
	t.Helper()
	cmd := strings.ReplaceAll(e.Command, `\%`, "\x00")
	if strings.Contains(cmd, "%") {
		t.Fatalf("unescaped %% in %q: cron cuts the command there", e.Command)
	}
	c := exec.Command("/bin/sh", "-c", strings.ReplaceAll(cmd, "\x00", "%"))
	c.Env = append([]string{"PATH=/usr/bin:/bin"}, e.Env...)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
}

// fakeTrendfetch is an executable at dir/name that records its arguments, one a line, and
// its TRENDFETCH_* variables in dir/REGION.args and dir/REGION.env (REGION its last argument).
func fakeTrendfetch(t *testing.T, dir, name string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	script := "#!/bin/sh\nfor a; do r=$a; done\nprintf '%s\\n' \"$@\" >\"" + dir + "/$r.args\"\nenv | grep ^TRENDFETCH_ | sort >\"" + dir + "/$r.env\"\necho ran\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// TestCrontabRender: a line per region on its schedule; run by sh as cron runs it, each line
// starts this trendfetch with its flags and `run --region R` (quoted paths, a "%" kept), with
// the settings without a flag in its environment, its output appended to LOG_DIR/R.log.
func TestCrontabRender(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "it's 100%")
	logDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := fakeTrendfetch(t, dir, "trend fetch")
	c := Crontab{Title: "trendfetch: regions US GB", Comments: []string{"WARNING: a warning"},
		Args: []string{bin, "--config", filepath.Join(dir, "tf.yaml")}, Env: []string{"TRENDFETCH_API_TIMEOUT=45s"},
		LogDir: logDir, TimeZone: "Europe/London", Jobs: []Job{{"US", "0 */2 * * *"}, {"GB", "3 */2 * * *"}}}
	var out strings.Builder
	if err := c.Render(&out); err != nil {
		t.Fatal(err)
	}
	comments, entries := parseCrontab(t, out.String())
	if !slices.Contains(comments, "# WARNING: a warning") || !slices.Contains(comments, "# trendfetch: regions US GB") {
		t.Errorf("title or warning missing from %q", comments)
	}
	if len(entries) != 2 || entries[0].Schedule != "0 */2 * * *" || entries[1].Schedule != "3 */2 * * *" {
		t.Fatalf("entries %+v", entries)
	}
	for i, region := range []string{"US", "GB"} {
		e := entries[i]
		if !slices.Contains(e.Env, "CRON_TZ=Europe/London") {
			t.Errorf("%s: the schedule's time zone is not in force: %q", region, e.Env)
		}
		e.run(t)
		want := []string{"--config", filepath.Join(dir, "tf.yaml"), "run", "--region", region}
		if got := readLines(t, filepath.Join(dir, region+".args")); !slices.Equal(got, want) {
			t.Errorf("%s: argv %q, want %q", region, got, want)
		}
		if got := readLines(t, filepath.Join(dir, region+".env")); !slices.Equal(got, []string{"TRENDFETCH_API_TIMEOUT=45s"}) {
			t.Errorf("%s: environment %q", region, got)
		}
		if got := readLines(t, filepath.Join(logDir, region+".log")); !slices.Equal(got, []string{"ran"}) {
			t.Errorf("%s: log %q", region, got)
		}
	}
}

// TestCrontabIsABlockMergedIntoACrontab: the output is one marked block that sets no
// variable for other entries (CRON_TZ aside, which cron has only in that form), and its own
// install line, run twice against a crontab holding other entries and variables, keeps them
// and leaves one block, the new one, last.
func TestCrontabIsABlockMergedIntoACrontab(t *testing.T) {
	dir := t.TempDir()
	c := Crontab{Title: "trendfetch: regions US", Args: []string{"/usr/bin/trendfetch", "--config", "/etc/trendfetch/trendfetch.yaml"},
		Env: []string{"TRENDFETCH_QUOTA_DB=/srv/q.db"}, LogDir: "/var/log/trendfetch", Jobs: []Job{{"US", "0 */2 * * *"}}}
	var out strings.Builder
	if err := c.Render(&out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if lines[0] != BlockBegin || lines[len(lines)-1] != BlockEnd {
		t.Fatalf("not one block between %q and %q:\n%s", BlockBegin, BlockEnd, out.String())
	}
	if _, entries := parseCrontab(t, out.String()+"0 3 * * * /usr/bin/backup\n"); len(entries[1].Env) != 0 {
		t.Errorf("the block sets %q for the entries after it", entries[1].Env)
	}
	_, install, ok := strings.Cut(out.String(), "\n#   (crontab -l")
	if !ok {
		t.Fatalf("no install line with crontab -l:\n%s", out.String())
	}
	install, _, _ = strings.Cut("(crontab -l"+install, "\n")

	// A crontab (the fake `crontab -l` and `crontab -` keep it in a file) with the user's
	// own variable and entry, and an older trendfetch block.
	crontab := filepath.Join(dir, "crontab")
	fake := "#!/bin/sh\ncase $1 in -l) cat " + crontab + " ;; -) cat >" + crontab + ".new && mv " + crontab + ".new " + crontab + " ;; esac\n"
	if err := os.WriteFile(filepath.Join(dir, "crontab-bin"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil || os.Rename(filepath.Join(dir, "crontab-bin"), filepath.Join(dir, "bin", "crontab")) != nil {
		t.Fatal(err)
	}
	mine := "MAILTO=ann@example.com\n30 4 * * * /usr/bin/backup\n"
	old := BlockBegin + "\n0 * * * * /old/trendfetch run --region US\n" + BlockEnd + "\n"
	if err := os.WriteFile(crontab, []byte(mine+old+"15 * * * * /usr/bin/other\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "FILE"), []byte(out.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		sh := exec.Command("/bin/sh", "-c", install)
		sh.Dir, sh.Env = dir, []string{"PATH=" + filepath.Join(dir, "bin") + ":/usr/bin:/bin"}
		if o, err := sh.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", install, err, o)
		}
	}
	if got, want := strings.Join(readLines(t, crontab), "\n")+"\n", mine+"15 * * * * /usr/bin/other\n"+out.String(); got != want {
		t.Errorf("crontab after installing twice:\n%s\nwant:\n%s", got, want)
	}
}
