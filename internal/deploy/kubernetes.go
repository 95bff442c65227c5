package deploy

import (
	"fmt"
	"io"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/exitcode"
)

// Name is the Secret and the ConfigMap the CronJobs expect in their namespace.
const Name = "trendfetch"

// SecretKeys maps each variable the CronJobs take from the Secret to its key there, besides the
// API key (youtube-api-key; docs/design.md §10a). Secrets are never inline in a manifest.
var SecretKeys = []struct {
	Env, Key string
	Optional bool
}{
	{config.Lookup("quota.redis.url").Env, "redis-url", false},
	{config.Lookup("database").Env, "database-url", false},
	{config.Lookup("runs.checkin_url").Env, "checkin-url", true},
}

// CronJobs is what the Kubernetes CronJobs of one configuration need.
type CronJobs struct {
	Title    string        // the header's first line
	Image    string        // the container image whose PATH holds trendfetch
	KeyEnv   string        // the variable the credential reads its API key from
	TimeZone string        // the schedule's IANA time zone
	Flags    []string      // further flags (--credential ...)
	Every    time.Duration // the interval between two runs of a region
	Jobs     []Job         // the regions in stagger order
}

// Job is one region's CronJob: Schedule is five crontab fields.
type Job struct{ Region, Schedule string }

// Render writes the header (how to create the Secret and ConfigMap) and a CronJob per region.
func (c CronJobs) Render(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", c.Title)
	b.WriteString("# One batch/v1 CronJob per region (Kubernetes 1.31 or later: timeZone, podFailurePolicy). First, in the namespace:\n")
	fmt.Fprintf(&b, "#   kubectl create secret generic %s --from-file=youtube-api-key=KEY_FILE", Name)
	for _, s := range SecretKeys {
		fmt.Fprintf(&b, " --from-file=%s=%s_FILE", s.Key, strings.ToUpper(strings.ReplaceAll(s.Key, "-", "_")))
	}
	fmt.Fprintf(&b, "\n#     (redis-url: the quota backend every host shares; database-url: postgres://... of the shared dataset;\n#     checkin-url, optional: the monitor's ping URL)\n")
	fmt.Fprintf(&b, "#   kubectl create configmap %s --from-file=trendfetch.yaml=CONFIG_FILE\n", Name)
	b.WriteString("# then pipe this output into: kubectl apply -f -\n")
	fmt.Fprintf(&b, "# Exit codes %s fail the Job at once (podFailurePolicy: not transient); exit 1 is retried up to backoffLimit times.\n", exitcode.Join(exitcode.NotRetried))
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	for _, j := range c.Jobs {
		if err := enc.Encode(c.cronJob(j)); err != nil {
			return err
		}
	}
	return enc.Close()
}

// cronJob is the CronJob of one region.
func (c CronJobs) cronJob(j Job) kobj {
	labels := kobj{"app.kubernetes.io/name": Name, "trendfetch/region": j.Region}
	return kobj{
		"apiVersion": "batch/v1",
		"kind":       "CronJob",
		"metadata":   kobj{"name": Name + "-" + strings.ToLower(j.Region), "labels": labels},
		"spec": kobj{
			"schedule":          j.Schedule,
			"timeZone":          c.TimeZone,
			"concurrencyPolicy": "Forbid",
			// A missed tick still starts within half an interval, not nearer the next tick.
			"startingDeadlineSeconds": max(int64(c.Every/2/time.Second), 60),
			"jobTemplate": kobj{
				"metadata": kobj{"labels": labels},
				"spec": kobj{
					"backoffLimit": 2,
					"podFailurePolicy": kobj{"rules": []kobj{
						{"action": "FailJob", "onExitCodes": kobj{"containerName": Name, "operator": "In", "values": exitcode.NotRetried}},
						// A pod evicted or preempted is not the run's failure.
						{"action": "Ignore", "onPodConditions": []kobj{{"type": "DisruptionTarget"}}},
					}},
					"template": kobj{"metadata": kobj{"labels": labels}, "spec": c.pod(j)},
				},
			},
		},
	}
}

// pod is the pod of region j's Job: non-root, the config from the ConfigMap, /tmp an emptyDir.
func (c CronJobs) pod(j Job) kobj {
	return kobj{
		"restartPolicy":                "Never", // podFailurePolicy requires it
		"automountServiceAccountToken": false,
		"securityContext": kobj{
			"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
			"seccompProfile": kobj{"type": "RuntimeDefault"},
		},
		"containers": []kobj{c.container(j)},
		"volumes": []kobj{
			{"name": "config", "configMap": kobj{"name": Name}},
			{"name": "tmp", "emptyDir": kobj{"sizeLimit": "64Mi"}},
		},
	}
}

// container runs `trendfetch run --region R` with the Secret's variables, read-only.
func (c CronJobs) container(j Job) kobj {
	env := []kobj{
		secretEnv(c.KeyEnv, "youtube-api-key"),
		{"name": config.Lookup("quota.backend").Env, "value": "redis"},
		{"name": config.Lookup("log.format").Env, "value": "json"},
	}
	for _, s := range SecretKeys {
		e := secretEnv(s.Env, s.Key)
		if s.Optional {
			e["valueFrom"].(kobj)["secretKeyRef"].(kobj)["optional"] = true
		}
		env = append(env, e)
	}
	args := append([]string{"--config", "/etc/trendfetch/trendfetch.yaml"}, c.Flags...)
	return kobj{
		"name":    Name,
		"image":   c.Image,
		"command": []string{"trendfetch"},
		"args":    append(args, "run", "--region", j.Region),
		"env":     env,
		"resources": kobj{
			"requests": kobj{"cpu": "50m", "memory": "64Mi"},
			"limits":   kobj{"memory": "256Mi"},
		},
		"securityContext": kobj{
			"allowPrivilegeEscalation": false,
			"readOnlyRootFilesystem":   true,
			"capabilities":             kobj{"drop": []string{"ALL"}},
		},
		"volumeMounts": []kobj{
			{"name": "config", "mountPath": "/etc/trendfetch", "readOnly": true},
			{"name": "tmp", "mountPath": "/tmp"},
		},
	}
}

// kobj is a Kubernetes object or field map; yaml.v3 writes map keys sorted.
type kobj = map[string]any

func secretEnv(name, key string) kobj {
	return kobj{"name": name, "valueFrom": kobj{"secretKeyRef": kobj{"name": Name, "key": key}}}
}
