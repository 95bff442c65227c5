package serve

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
)

// TestAnswersMatchOpenAPI: every route's answers, errors included, are
// validated against the served /v1/openapi.yaml by Ajv (a validator
// trendfetch did not write; scripts/ensure-openapi.sh installs it), which
// also requires every object schema to list its required keys and to say
// whether others may appear (issue 31 item 16). Without node or Ajv the
// test skips, and fails under CI=true.
func TestAnswersMatchOpenAPI(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "openapi", "validate.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "ajv-formats"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Ajv is required in CI (CI=true): %v; run scripts/ensure-openapi.sh", err)
		}
		t.Skipf("skipping: Ajv not installed (scripts/ensure-openapi.sh): %v", err)
	}
	db, lim := shared(t)
	const token = "s3cret-token-0123456789"
	f := start(t, db, lim, func(o *Options) { o.Token = token })
	id := youtubetest.Sample()[0].Id
	type answer struct {
		Route  string `json:"route"`
		Method string `json:"method"`
		Status int    `json:"status"`
		Body   any    `json:"body"`
	}
	var answers []answer
	seen := map[string]bool{}
	for _, tc := range []struct{ route, path string }{
		{"/healthz", "/healthz"},
		{"/v1/dashboard", "/v1/dashboard"},
		{"/v1/search", "/v1/search?q=video&limit=3"},
		{"/v1/search", "/v1/search?q=%E6%9D%B1%E4%BA%AC"},
		{"/v1/search", "/v1/search?q=%22unbalanced"},
		{"/v1/charts/{region}", "/v1/charts/US"},
		{"/v1/charts/{region}", "/v1/charts/JP"},
		{"/v1/charts/{region}", "/v1/charts/US?kind=weekly"},
		{"/v1/videos/{id}", "/v1/videos/" + id},
		{"/v1/videos/{id}", "/v1/videos/bad"},
		{"/v1/videos/{id}", "/v1/videos/AAAAAAAAAAA"},
		{"/v1/runs", "/v1/runs?limit=1"},
		{"/v1/runs", "/v1/runs?limit=0"},
		{"/v1/quota", "/v1/quota"},
		{"/v1/regions", "/v1/regions"},
		{"/v1/coverage", "/v1/coverage?region=US&since=7d"},
		{"/v1/coverage", "/v1/coverage?since=soon"},
		{"/v1/coverage", "/v1/coverage?region=JP"},
	} {
		resp, body := get(t, f.url+tc.path, "Authorization", "Bearer "+token)
		answers = append(answers, answer{tc.route, "get", resp.StatusCode, body})
		seen[tc.route] = true
	}
	resp, body := get(t, f.url+"/v1/runs") // no token
	answers = append(answers, answer{"/v1/runs", "get", resp.StatusCode, body})
	for range 60 {
		if resp, body = get(t, f.url+"/v1/regions", "Authorization", "Bearer "+token); resp.StatusCode == 429 {
			answers = append(answers, answer{"/v1/regions", "get", resp.StatusCode, body})
			break
		}
	}
	statuses := map[int]bool{}
	for _, a := range answers {
		statuses[a.Status] = true
	}
	for _, s := range []int{200, 400, 401, 404, 429} {
		if !statuses[s] {
			t.Errorf("no %d answer was validated", s)
		}
	}
	for _, r := range Routes() {
		if path := strings.TrimPrefix(r, "GET "); strings.HasPrefix(path, "/v1/") && path != "/v1/openapi.yaml" && !seen[path] {
			t.Errorf("route %s: no answer validated", r)
		}
	}
	dir := t.TempDir()
	raw, _ := json.Marshal(answers)
	answersFile := filepath.Join(dir, "answers.json")
	docFile := filepath.Join(dir, "openapi.yaml")
	if err := os.WriteFile(answersFile, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(docFile, openAPI, 0o644); err != nil { // as /v1/openapi.yaml serves it
		t.Fatal(err)
	}
	out, err := exec.Command(node, script, docFile, answersFile).CombinedOutput()
	if err != nil {
		t.Errorf("Ajv: the answers do not match /v1/openapi.yaml (%v):\n%s", err, out)
	}
}
