package deploy

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// unitFile is a parsed unit file: section, key, the values in order (systemd.syntax(7)).
type unitFile map[string]map[string][]string

// parseUnits splits Render's output at its "# ---- NAME ----" lines and parses each unit:
// comments (# and ;) and blank lines skipped, [Section] headers, Key=Value assignments.
func parseUnits(t *testing.T, text string) (header string, units map[string]unitFile) {
	t.Helper()
	units = map[string]unitFile{}
	var cur unitFile
	section := ""
	for _, line := range strings.Split(text, "\n") {
		if name, ok := strings.CutPrefix(line, "# ---- "); ok {
			cur, section = unitFile{}, ""
			units[strings.TrimSuffix(name, " ----")] = cur
			continue
		}
		if cur == nil {
			header += line + "\n"
			continue
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			cur[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("not an assignment in a section: %q", line)
			}
			cur[section][strings.TrimSpace(k)] = append(cur[section][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return header, units
}

// one is the single value of key in section, failing the test unless there is exactly one.
func (u unitFile) one(t *testing.T, section, key string) string {
	t.Helper()
	if v := u[section][key]; len(v) == 1 {
		return v[0]
	}
	t.Fatalf("[%s] %s=%v: want one value", section, key, u[section][key])
	return ""
}

// specifiers resolves systemd's % specifiers as a unit setting does (systemd.unit(5),
// "Specifiers"): "%%" is "%"; any other specifier stands for something else than the text
// written, so it is an error here.
func specifiers(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		return "", fmt.Errorf("specifier %q in %q: systemd replaces it", s[i:min(i+2, len(s))], s)
	}
	return b.String(), nil
}

// commandLine is the argv systemd runs for an ExecStart= value (systemd.service(5), "Command
// lines"): specifiers resolved, words split on spaces, "..." and '...' quoting with C escapes,
// "$$" a "$"; a variable ($NAME, ${NAME}) is an error, since none is meant.
func commandLine(value string) ([]string, error) {
	s, err := specifiers(value)
	if err != nil {
		return nil, err
	}
	var args []string
	for i := 0; i < len(s); {
		if s[i] == ' ' {
			i++
			continue
		}
		word, n, err := commandWord(s[i:], true)
		if err != nil {
			return nil, err
		}
		args, i = append(args, word), i+n
	}
	return args, nil
}

// commandWord reads one word of a command line from s: the word and the bytes it took;
// variables says whether "$" starts a variable ("$$" a "$").
func commandWord(s string, variables bool) (string, int, error) {
	var b strings.Builder
	quote := byte(0)
	i := 0
	for ; i < len(s) && (quote != 0 || s[i] != ' '); i++ {
		switch c := s[i]; {
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case c == quote:
			quote = 0
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case variables && c == '$' && i+1 < len(s) && s[i+1] == '$':
			b.WriteByte('$')
			i++
		case variables && c == '$':
			return "", 0, fmt.Errorf("variable at %q: systemd expands it", s[i:])
		default:
			b.WriteByte(c)
		}
	}
	if quote != 0 {
		return "", 0, fmt.Errorf("unterminated quote in %q", s)
	}
	return b.String(), i, nil
}

// environment is the NAME=value assignments of an Environment= value: specifiers resolved,
// quoted words unquoted, no variable expansion (systemd.exec(5)).
func environment(value string) ([]string, error) {
	s, err := specifiers(value)
	if err != nil {
		return nil, err
	}
	var out []string
	for i := 0; i < len(s); {
		if s[i] == ' ' {
			i++
			continue
		}
		word, n, err := commandWord(s[i:], false)
		if err != nil {
			return nil, err
		}
		out, i = append(out, word), i+n
	}
	return out, nil
}

func testUnits() Units {
	return Units{
		Title:    "trendfetch: regions US GB",
		Binary:   "/usr/bin/trendfetch",
		Config:   "/etc/trendfetch/trendfetch.yaml",
		Flags:    []string{"--credential", "proj"},
		Env:      []string{"TRENDFETCH_API_TIMEOUT=45s"},
		QuotaDB:  "/srv/quota/q.db",
		Database: "/srv/data/tf.db", KeyCredential: "youtube-api-key-proj",
		Credentials:     []string{"checkin-url"},
		MetricsTextfile: "/var/lib/node-exporter",
		Timers: []Timer{
			{Region: "US", OnCalendar: "*-*-* 00/2:00:00 Europe/London", Spec: "every 2h"},
			{Region: "GB", OnCalendar: "*-*-* 00/2:07:00 Europe/London", Spec: "every 2h, 7m after"},
		},
	}
}

// TestUnitsRender: per region a oneshot service running `trendfetch run --region R` with the
// config, database and flags as its argv, as the trendfetch user in the sandbox, after the
// previous region's service, with the API key and further secrets as credentials; and a
// persistent timer at the region's OnCalendar=.
func TestUnitsRender(t *testing.T) {
	var out strings.Builder
	warnings, err := testUnits().Render(&out)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Render: %v, warnings %v", err, warnings)
	}
	header, units := parseUnits(t, out.String())
	if want := []string{"trendfetch-GB.service", "trendfetch-GB.timer", "trendfetch-US.service", "trendfetch-US.timer"}; !slices.Equal(sortedKeys(units), want) {
		t.Fatalf("units %v, want %v", sortedKeys(units), want)
	}
	for _, want := range []string{"useradd --system --user-group", "systemctl enable --now trendfetch-US.timer trendfetch-GB.timer",
		"/etc/trendfetch/youtube-api-key)", "/etc/trendfetch/checkin-url)", "The database is /srv/data/tf.db"} {
		if !strings.Contains(header, want) {
			t.Errorf("header lacks %q:\n%s", want, header)
		}
	}
	gb := units["trendfetch-GB.service"]
	argv, err := commandLine(gb.one(t, "Service", "ExecStart"))
	want := []string{"/usr/bin/trendfetch", "--config", "/etc/trendfetch/trendfetch.yaml", "--database", "/srv/data/tf.db", "--credential", "proj", "run", "--region", "GB"}
	if err != nil || !slices.Equal(argv, want) {
		t.Errorf("ExecStart argv %q (%v), want %q", argv, err, want)
	}
	for key, want := range map[string]string{"Type": "oneshot", "User": User, "Group": User, "StateDirectory": "trendfetch",
		"ProtectSystem": "strict", "ProtectHome": "read-only", "PrivateTmp": "yes", "NoNewPrivileges": "yes", "SuccessExitStatus": "75 3"} {
		if got := gb.one(t, "Service", key); got != want {
			t.Errorf("%s=%s, want %s", key, got, want)
		}
	}
	if got := gb.one(t, "Unit", "After"); got != "network-online.target trendfetch-US.service" {
		t.Errorf("GB: After=%s, want it after US's service", got)
	}
	var env []string
	for _, v := range gb["Service"]["Environment"] {
		kv, err := environment(v)
		if err != nil {
			t.Error(err)
		}
		env = append(env, kv...)
	}
	if want := []string{"TRENDFETCH_API_TIMEOUT=45s", "TRENDFETCH_QUOTA_DB=/srv/quota/q.db"}; !slices.Equal(env, want) {
		t.Errorf("Environment: %q, want %q", env, want)
	}
	if got, want := gb["Service"]["ReadWritePaths"], []string{"/srv/data", "/srv/quota", "/var/lib/node-exporter"}; !slices.Equal(got, want) {
		t.Errorf("ReadWritePaths=%v, want %v", got, want)
	}
	if got, want := gb["Service"]["LoadCredential"], []string{"youtube-api-key-proj:/etc/trendfetch/youtube-api-key", "checkin-url:/etc/trendfetch/checkin-url"}; !slices.Equal(got, want) {
		t.Errorf("LoadCredential=%v, want %v", got, want)
	}
	timer := units["trendfetch-GB.timer"]
	for key, want := range map[string]string{"OnCalendar": "*-*-* 00/2:07:00 Europe/London", "Persistent": "true", "AccuracySec": "1s"} {
		if got := timer.one(t, "Timer", key); got != want {
			t.Errorf("timer: %s=%s, want %s", key, got, want)
		}
	}
	if got := timer.one(t, "Install", "WantedBy"); got != "timers.target" {
		t.Errorf("timer: WantedBy=%s", got)
	}
}

// TestUnitsRenderMovesWhatTheSandboxHides: a binary, config or database under /tmp or a home
// is used where the service can see it, each move a warning in the header; a key file or a
// metrics directory there is an error naming it.
func TestUnitsRenderMovesWhatTheSandboxHides(t *testing.T) {
	u := testUnits()
	u.Binary, u.Config, u.Database, u.QuotaDB = "/tmp/b/trendfetch", "/home/ann/tf.yaml", "/home/ann/tf.db", ""
	var out strings.Builder
	warnings, err := u.Render(&out)
	if err != nil || len(warnings) != 3 {
		t.Fatalf("Render: %v, warnings %q, want 3", err, warnings)
	}
	header, units := parseUnits(t, out.String())
	for _, w := range warnings {
		if !strings.Contains(header, "# WARNING: "+w+"\n") {
			t.Errorf("warning %q not in the header", w)
		}
	}
	argv, err := commandLine(units["trendfetch-US.service"].one(t, "Service", "ExecStart"))
	want := []string{Binary, "--config", "/etc/trendfetch/trendfetch.yaml", "--database", "/var/lib/trendfetch/tf.db"}
	if err != nil || !slices.Equal(argv[:5], want) {
		t.Errorf("ExecStart argv %q (%v), want it to start %q", argv, err, want)
	}
	for _, bad := range []Units{{SecretFiles: []string{"/root/key"}}, {MetricsTextfile: "/var/tmp/prom"}} {
		if _, err := bad.Render(&out); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestUnitsEscapeSpecifiersAndVariables: a "%" (a specifier to systemd) in the API key's
// credential name or a path, and a "$" (a variable in ExecStart=) in a path or flag, reach
// the service as written (systemd.unit(5) "Specifiers", systemd.service(5) "Command lines").
func TestUnitsEscapeSpecifiersAndVariables(t *testing.T) {
	u := testUnits()
	u.KeyCredential, u.Config, u.Database = "youtube-api-key-100%b", "/etc/tf$HOME/trendfetch.yaml", "/srv/a$b%c/tf d.db"
	u.Flags = []string{"--credential", "p${USER}"}
	var out strings.Builder
	if _, err := u.Render(&out); err != nil {
		t.Fatal(err)
	}
	_, units := parseUnits(t, out.String())
	svc := units["trendfetch-US.service"]
	argv, err := commandLine(svc.one(t, "Service", "ExecStart"))
	want := []string{"/usr/bin/trendfetch", "--config", "/etc/tf$HOME/trendfetch.yaml", "--database", "/srv/a$b%c/tf d.db", "--credential", "p${USER}", "run", "--region", "US"}
	if err != nil || !slices.Equal(argv, want) {
		t.Errorf("ExecStart argv %q (%v), want %q", argv, err, want)
	}
	var creds []string
	for _, v := range svc["Service"]["LoadCredential"] {
		c, err := specifiers(v)
		if err != nil {
			t.Error("LoadCredential:", err)
		}
		creds = append(creds, c)
	}
	if len(creds) == 0 || creds[0] != "youtube-api-key-100%b:/etc/trendfetch/youtube-api-key" {
		t.Errorf("LoadCredential=%q, want the credential youtube-api-key-100%%b", creds)
	}
	var rw []string
	for _, v := range svc["Service"]["ReadWritePaths"] {
		p, err := environment(v) // a list of paths, quoted and with specifiers as Environment=
		if err != nil {
			t.Error("ReadWritePaths:", err)
		}
		rw = append(rw, p...)
	}
	if !slices.Contains(rw, "/srv/a$b%c") {
		t.Errorf("ReadWritePaths=%q, want the database's directory /srv/a$b%%c", rw)
	}
}

// TestShippedUnitInstallsAsGenerated: configs/trendfetch.service's install header creates the
// user and the key's credential file with the generated units' steps (a user group; the key
// pasted, never typed into a command line and the shell's history).
func TestShippedUnitInstallsAsGenerated(t *testing.T) {
	data, err := os.ReadFile("../../configs/trendfetch.service")
	if err != nil {
		t.Fatal(err)
	}
	header, _, _ := strings.Cut(string(data), "\n[Unit]")
	for _, step := range InstallSteps("youtube-api-key") {
		if !strings.Contains(header, "\n#   "+step+"\n") {
			t.Errorf("the shipped unit's header lacks the generated step %q:\n%s", step, header)
		}
	}
	for _, line := range strings.Split(header, "\n") {
		if strings.Contains(line, "youtube-api-key") && strings.ContainsAny(line, "'\"") {
			t.Errorf("the key is typed into a command line: %s", line)
		}
	}
}
