package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestCrontabKubernetesCronJobs: --format kubernetes prints one batch/v1
// CronJob per region that kubernetes-models (the Kubernetes API schema,
// offline; scripts/kubernetes/validate.mjs) accepts with no unknown field,
// on the crontab lines' staggered schedule in the schedule's time zone, with
// Forbid, a starting deadline, exit codes 2, 3 and 75 failing the Job
// (exit 1 retried within backoffLimit), every secret from the Secret and
// none inline, resource requests and a non-root read-only container.
func TestCrontabKubernetesCronJobs(t *testing.T) {
	e := newEnv(t)
	cfg := e.writeConfig("regions: [US, GB, JP]\nschedule:\n  every: 2h\n  stagger: 7m\n  timezone: Europe/London\n")
	e.vars["YOUTUBE_API_KEY"] = "AIzaInlineKey"
	e.vars["TRENDFETCH_REDIS_URL"] = "redis://:hunter2@127.0.0.1:1/0"
	res := e.run("--config", cfg, "crontab", "--format", "kubernetes", "--image", "registry.example.com/trendfetch:1.0")
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	if strings.Contains(res.stdout, "AIzaInlineKey") || strings.Contains(res.stdout, "hunter2") {
		t.Fatalf("a secret is inline:\n%s", res.stdout)
	}
	if out := validateManifests(t, res.stdout); strings.TrimSpace(out) != "3 valid" {
		t.Errorf("kubernetes-models: %s", out)
	}
	crontab := e.run("--config", cfg, "crontab").stdout

	dec := yaml.NewDecoder(strings.NewReader(res.stdout))
	var regions []string
	for {
		var cj struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string
			Spec       struct {
				Schedule                string
				TimeZone                string `yaml:"timeZone"`
				ConcurrencyPolicy       string `yaml:"concurrencyPolicy"`
				StartingDeadlineSeconds int    `yaml:"startingDeadlineSeconds"`
				JobTemplate             struct {
					Spec struct {
						BackoffLimit     int `yaml:"backoffLimit"`
						PodFailurePolicy struct {
							Rules []struct {
								Action      string
								OnExitCodes *struct{ Values []int } `yaml:"onExitCodes"`
							}
						} `yaml:"podFailurePolicy"`
						Template struct {
							Spec struct {
								RestartPolicy   string `yaml:"restartPolicy"`
								SecurityContext struct {
									RunAsNonRoot bool `yaml:"runAsNonRoot"`
								} `yaml:"securityContext"`
								Containers []struct {
									Args []string
									Env  []struct {
										Name      string
										Value     *string
										ValueFrom *struct {
											SecretKeyRef struct{ Name, Key string } `yaml:"secretKeyRef"`
										} `yaml:"valueFrom"`
									}
									Resources struct {
										Requests map[string]string
									}
									SecurityContext struct {
										ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
										AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
									} `yaml:"securityContext"`
								}
							}
						}
					}
				} `yaml:"jobTemplate"`
			}
		}
		if err := dec.Decode(&cj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}

		job := cj.Spec.JobTemplate.Spec
		pod := job.Template.Spec
		if cj.APIVersion != "batch/v1" || cj.Kind != "CronJob" || len(pod.Containers) != 1 {
			t.Fatalf("not one batch/v1 CronJob with one container: %+v", cj)
		}
		c := pod.Containers[0]
		region := c.Args[len(c.Args)-1]
		regions = append(regions, region)
		if !strings.Contains(crontab, "\n"+cj.Spec.Schedule+" ") || !strings.Contains(crontab, "run --region "+region+" ") {
			t.Errorf("%s: schedule %q is not its crontab line's:\n%s", region, cj.Spec.Schedule, crontab)
		}
		if cj.Spec.TimeZone != "Europe/London" || cj.Spec.ConcurrencyPolicy != "Forbid" || cj.Spec.StartingDeadlineSeconds <= 0 {
			t.Errorf("%s: timeZone %q, concurrencyPolicy %q, startingDeadlineSeconds %d", region, cj.Spec.TimeZone, cj.Spec.ConcurrencyPolicy, cj.Spec.StartingDeadlineSeconds)
		}
		var failJob []int
		for _, r := range job.PodFailurePolicy.Rules {
			if r.OnExitCodes != nil && r.Action == "FailJob" {
				failJob = append(failJob, r.OnExitCodes.Values...)
			} else if r.OnExitCodes != nil {
				t.Errorf("%s: rule %+v", region, r)
			}
		}
		slices.Sort(failJob)
		if !slices.Equal(failJob, []int{2, 3, 75}) || job.BackoffLimit < 1 || pod.RestartPolicy != "Never" {
			t.Errorf("%s: FailJob on %v, backoffLimit %d, restartPolicy %q: want 2, 3, 75 not retried, exit 1 retried", region, failJob, job.BackoffLimit, pod.RestartPolicy)
		}
		fromSecret := map[string]string{}
		for _, ev := range c.Env {
			if ev.ValueFrom != nil {
				fromSecret[ev.Name] = ev.ValueFrom.SecretKeyRef.Key
			}
		}
		for _, name := range []string{"YOUTUBE_API_KEY", "TRENDFETCH_REDIS_URL", "TRENDFETCH_DATABASE"} {
			if fromSecret[name] == "" {
				t.Errorf("%s: %s is not from the Secret: %+v", region, name, c.Env)
			}
		}
		if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" || !pod.SecurityContext.RunAsNonRoot ||
			!c.SecurityContext.ReadOnlyRootFilesystem || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
			t.Errorf("%s: requests %v, runAsNonRoot %v, container %+v", region, c.Resources.Requests, pod.SecurityContext.RunAsNonRoot, c.SecurityContext)
		}
	}
	if !slices.Equal(regions, []string{"US", "GB", "JP"}) {
		t.Errorf("CronJobs for %v, want US GB JP", regions)
	}

	// The validator is not a rubber stamp.
	bad := strings.Replace(res.stdout, "readOnlyRootFilesystem", "readOnlyRootFS", 1)
	bad = strings.Replace(bad, "backoffLimit: 2", "backoffLimit: two", 1)
	if out := validateManifests(t, bad); !strings.Contains(out, "readOnlyRootFS: unknown field") || !strings.Contains(out, "backoffLimit must be integer") {
		t.Errorf("kubernetes-models accepted a broken CronJob: %s", out)
	}
	if res = e.run("--config", cfg, "crontab", "--format", "kubernetes"); res.code != 2 || !strings.Contains(res.stderr, "needs --image") {
		t.Errorf("no --image: exit %d\n%s", res.code, res.stderr)
	}
}

// validateManifests runs scripts/kubernetes/validate.mjs (kubernetes-models,
// installed by scripts/ensure-kubernetes-models.sh) on YAML manifests and
// returns what it printed. Missing node or kubernetes-models skips the
// test, and fails it under CI=true.
func validateManifests(t *testing.T, manifests string) string {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "kubernetes", "validate.mjs"))
	node := ""
	if err == nil {
		node, err = exec.LookPath("node")
	}
	if err == nil {
		_, err = os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "kubernetes-models"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("kubernetes-models is required in CI (CI=true): %v; run scripts/ensure-kubernetes-models.sh", err)
		}
		t.Skipf("skipping: kubernetes-models not installed (scripts/ensure-kubernetes-models.sh): %v", err)
	}
	var out bytes.Buffer
	cmd := exec.Command(node, script)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(manifests), &out, &out
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("node validate.mjs: %v\n%s", err, out.String())
	}
	return out.String()
}
