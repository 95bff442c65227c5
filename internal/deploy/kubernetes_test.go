package deploy

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// cronJobDoc is the part of a rendered CronJob the tests read.
type cronJobDoc struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string
	Metadata   struct {
		Name   string
		Labels map[string]string
	}
	Spec struct {
		Schedule                string
		TimeZone                string `yaml:"timeZone"`
		ConcurrencyPolicy       string `yaml:"concurrencyPolicy"`
		StartingDeadlineSeconds int    `yaml:"startingDeadlineSeconds"`
		JobTemplate             struct {
			Spec struct {
				PodFailurePolicy struct {
					Rules []struct {
						Action          string
						OnExitCodes     *struct{ Values []int } `yaml:"onExitCodes"`
						OnPodConditions []map[string]string     `yaml:"onPodConditions"`
					}
				} `yaml:"podFailurePolicy"`
				Template struct{ Spec podDoc }
			}
		} `yaml:"jobTemplate"`
	}
}

// podDoc is a rendered pod spec.
type podDoc struct {
	RestartPolicy   string `yaml:"restartPolicy"`
	SecurityContext struct {
		RunAsNonRoot bool `yaml:"runAsNonRoot"`
		RunAsUser    int  `yaml:"runAsUser"`
		FSGroup      int  `yaml:"fsGroup"`
	} `yaml:"securityContext"`
	Containers []struct {
		Command, Args []string
		Env           []struct {
			Name      string
			Value     *string
			ValueFrom *struct {
				SecretKeyRef struct {
					Name, Key string
					Optional  bool
				} `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		}
		SecurityContext struct {
			ReadOnlyRootFilesystem bool `yaml:"readOnlyRootFilesystem"`
		} `yaml:"securityContext"`
		VolumeMounts []struct {
			Name      string
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	}
	Volumes []map[string]any
}

// parseCronJobs decodes every YAML document of Render's output.
func parseCronJobs(t *testing.T, text string) []cronJobDoc {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(text))
	var docs []cronJobDoc
	for {
		var d cronJobDoc
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("YAML: %v\n%s", err, text)
		}
		docs = append(docs, d)
	}
}

// env is the pod's variables: a value, or "secret:KEY" (with "?" when optional).
func (p podDoc) env() map[string]string {
	out := map[string]string{}
	for _, e := range p.Containers[0].Env {
		switch {
		case e.Value != nil:
			out[e.Name] = *e.Value
		case e.ValueFrom != nil:
			out[e.Name] = "secret:" + e.ValueFrom.SecretKeyRef.Key + map[bool]string{true: "?"}[e.ValueFrom.SecretKeyRef.Optional]
		}
	}
	return out
}

func testCronJobs() CronJobs {
	return CronJobs{Title: "trendfetch: regions US GB", Image: "registry.example.com/trendfetch:1.0",
		Env:      []SecretEnv{{"YOUTUBE_API_KEY", "youtube-api-key", false}, {"TRENDFETCH_CHECKIN_URL", "checkin-url", true}},
		TimeZone: "Europe/London", Flags: []string{"--credential", "proj"}, Every: 2 * time.Hour,
		Jobs: []Job{{"US", "0 */2 * * *"}, {"GB", "7 */2 * * *"}}}
}

// TestCronJobsRender: one batch/v1 CronJob per region on its schedule and time zone, never
// two runs of a region at once, exit codes 2, 3 and 75 failing the Job, a non-root read-only
// container running `trendfetch --config ... run --region R`, every secret from the Secret.
func TestCronJobsRender(t *testing.T) {
	var out strings.Builder
	if err := testCronJobs().Render(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "kubectl create configmap trendfetch --from-file=trendfetch.yaml=CONFIG_FILE") {
		t.Errorf("no ConfigMap step in the header:\n%s", out.String())
	}
	docs := parseCronJobs(t, out.String())
	if len(docs) != 2 {
		t.Fatalf("%d documents, want 2", len(docs))
	}
	for i, region := range []string{"US", "GB"} {
		d := docs[i]
		if d.APIVersion != "batch/v1" || d.Kind != "CronJob" || d.Metadata.Name != "trendfetch-"+strings.ToLower(region) || d.Metadata.Labels["trendfetch/region"] != region {
			t.Errorf("%s: %s %s %s %v", region, d.APIVersion, d.Kind, d.Metadata.Name, d.Metadata.Labels)
		}
		s := d.Spec
		if s.Schedule != []string{"0 */2 * * *", "7 */2 * * *"}[i] || s.TimeZone != "Europe/London" || s.ConcurrencyPolicy != "Forbid" || s.StartingDeadlineSeconds != 3600 {
			t.Errorf("%s: schedule %q in %q, %s, deadline %ds", region, s.Schedule, s.TimeZone, s.ConcurrencyPolicy, s.StartingDeadlineSeconds)
		}
		rules := s.JobTemplate.Spec.PodFailurePolicy.Rules
		if len(rules) != 2 || rules[0].Action != "FailJob" || !slices.Equal(rules[0].OnExitCodes.Values, []int{2, 3, 75}) || rules[1].Action != "Ignore" {
			t.Errorf("%s: podFailurePolicy %+v", region, rules)
		}
		pod := s.JobTemplate.Spec.Template.Spec
		c := pod.Containers[0]
		want := []string{"--config", "/etc/trendfetch/trendfetch.yaml", "--credential", "proj", "run", "--region", region}
		if !slices.Equal(c.Command, []string{"trendfetch"}) || !slices.Equal(c.Args, want) {
			t.Errorf("%s: %q %q, want trendfetch %q", region, c.Command, c.Args, want)
		}
		if pod.RestartPolicy != "Never" || !pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.RunAsUser != 65532 || !c.SecurityContext.ReadOnlyRootFilesystem {
			t.Errorf("%s: pod %+v", region, pod)
		}
		env := pod.env()
		for k, v := range map[string]string{"YOUTUBE_API_KEY": "secret:youtube-api-key", "TRENDFETCH_CHECKIN_URL": "secret:checkin-url?",
			"TRENDFETCH_QUOTA_BACKEND": "redis", "TRENDFETCH_LOG_FORMAT": "json"} {
			if env[k] != v {
				t.Errorf("%s: $%s = %q, want %q (all: %v)", region, k, env[k], v, env)
			}
		}
	}
}

// TestCronJobsMountSecretFilesWhereTheConfigNamesThem: a secret the configuration reads from a
// file is the Secret's key projected at that path beside trendfetch.yaml, readable by the
// pod's group only; the header names each and its notes; the disruption rule has its status.
func TestCronJobsMountSecretFilesWhereTheConfigNamesThem(t *testing.T) {
	c := testCronJobs()
	c.Files = []SecretFile{{"database-url", "/etc/trendfetch/secrets/database-url"}}
	c.Notes = []string{"database /var/lib/trendfetch/tf.db is an embedded SQLite file"}
	var out strings.Builder
	if err := c.Render(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--from-file=database-url=DATABASE_URL_FILE", "the pods' file /etc/trendfetch/secrets/database-url", "\n# database /var/lib/trendfetch/tf.db is an embedded"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("header lacks %q:\n%s", want, out.String())
		}
	}
	d := parseCronJobs(t, out.String())[0]
	if rule := d.Spec.JobTemplate.Spec.PodFailurePolicy.Rules[1].OnPodConditions; len(rule) != 1 || rule[0]["type"] != "DisruptionTarget" || rule[0]["status"] != "True" {
		t.Errorf("onPodConditions %v, want DisruptionTarget with status True", rule)
	}
	pod := d.Spec.JobTemplate.Spec.Template.Spec
	var doc struct {
		Projected struct {
			DefaultMode int `yaml:"defaultMode"`
			Sources     []struct {
				ConfigMap *projectedRef `yaml:"configMap"`
				Secret    *projectedRef
			}
		}
	}
	raw, _ := yaml.Marshal(pod.Volumes[0])
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{} // path under the mount: ConfigMap or Secret key
	for _, src := range doc.Projected.Sources {
		for kind, ref := range map[string]*projectedRef{"configmap:": src.ConfigMap, "secret:": src.Secret} {
			if ref == nil {
				continue
			}
			for _, it := range ref.Items {
				files[ConfigDir+"/"+it.Path] = kind + it.Key
			}
		}
	}
	want := map[string]string{ConfigDir + "/trendfetch.yaml": "configmap:trendfetch.yaml", "/etc/trendfetch/secrets/database-url": "secret:database-url"}
	if fmt.Sprint(files) != fmt.Sprint(want) || doc.Projected.DefaultMode != 0o440 || pod.SecurityContext.FSGroup != 65532 {
		t.Errorf("files %v (mode %o, fsGroup %d), want %v, 0440, 65532", files, doc.Projected.DefaultMode, pod.SecurityContext.FSGroup, want)
	}
	if m := pod.Containers[0].VolumeMounts[0]; m.MountPath != ConfigDir {
		t.Errorf("config volume mounted at %s", m.MountPath)
	}
}

// projectedRef is a ConfigMap or Secret source of a projected volume.
type projectedRef struct {
	Name  string
	Items []struct{ Key, Path string }
}
