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

// ConfigDir is where the pods see the ConfigMap's trendfetch.yaml and the Secret's files: one
// projected volume, so that a file the configuration names under it is found at its path.
const ConfigDir = "/etc/trendfetch"

// podUser is the pods' UID, GID and fsGroup: the projected files are group-readable by it.
const podUser = 65532

// SecretEnv is a variable the pods take from the Secret's Key (Optional: the Secret may lack it).
type SecretEnv struct {
	Env, Key string
	Optional bool
}

// SecretFile is the Secret's Key mounted at Path, a file the configuration names under ConfigDir.
type SecretFile struct{ Key, Path string }

// CronJobs is what the Kubernetes CronJobs of one configuration need; secrets are never inline
// (docs/operations.md, "Kubernetes").
type CronJobs struct {
	Title    string        // the header's first line
	Image    string        // the container image whose PATH holds trendfetch
	TimeZone string        // the schedule's IANA time zone
	Flags    []string      // further flags (--credential ...)
	Every    time.Duration // the interval between two runs of a region
	Jobs     []Job         // the regions in stagger order
	Env      []SecretEnv   // the secrets the pods read from variables
	Files    []SecretFile  // the secrets the pods read from the files the configuration names
	Notes    []string      // header lines: a setting the pods do not honour and what replaces it
}

// Job is one region's CronJob: Schedule is five crontab fields.
type Job struct{ Region, Schedule string }

// Render writes the header (how to create the Secret and ConfigMap) and a CronJob per region.
func (c CronJobs) Render(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", c.Title)
	b.WriteString("# One batch/v1 CronJob per region (Kubernetes 1.31 or later: timeZone, podFailurePolicy). First, in the namespace:\n")
	fmt.Fprintf(&b, "#   kubectl create secret generic %s", Name)
	for _, k := range c.secretKeys() {
		fmt.Fprintf(&b, " --from-file=%s=%s_FILE", k, strings.ToUpper(strings.ReplaceAll(k, "-", "_")))
	}
	fmt.Fprintf(&b, "\n#   kubectl create configmap %s --from-file=trendfetch.yaml=CONFIG_FILE\n", Name)
	for _, f := range c.Files {
		fmt.Fprintf(&b, "#   (the Secret's %s is the pods' file %s, where the configuration names it)\n", f.Key, f.Path)
	}
	for _, e := range c.Env {
		fmt.Fprintf(&b, "#   (the Secret's %s is the pods' $%s%s)\n", e.Key, e.Env, map[bool]string{true: ", optional"}[e.Optional])
	}
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "# %s\n", n)
	}
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

// secretKeys is every key of the Secret the pods read, files first.
func (c CronJobs) secretKeys() []string {
	var keys []string
	for _, f := range c.Files {
		keys = append(keys, f.Key)
	}
	for _, e := range c.Env {
		keys = append(keys, e.Key)
	}
	return keys
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
						// A pod evicted or preempted is not the run's failure; apiservers before
						// kubernetes/kubernetes#131525 refuse the rule without its status.
						{"action": "Ignore", "onPodConditions": []kobj{{"type": "DisruptionTarget", "status": "True"}}},
					}},
					"template": kobj{"metadata": kobj{"labels": labels}, "spec": c.pod(j)},
				},
			},
		},
	}
}

// pod is the pod of region j's Job: non-root, read-only, the config and secret files in one
// projected volume, /tmp an emptyDir.
func (c CronJobs) pod(j Job) kobj {
	return kobj{
		"restartPolicy":                "Never", // podFailurePolicy requires it
		"automountServiceAccountToken": false,
		"securityContext": kobj{
			"runAsNonRoot": true, "runAsUser": podUser, "runAsGroup": podUser, "fsGroup": podUser,
			"seccompProfile": kobj{"type": "RuntimeDefault"},
		},
		"containers": []kobj{c.container(j)},
		"volumes": []kobj{
			{"name": "config", "projected": c.projected()},
			{"name": "tmp", "emptyDir": kobj{"sizeLimit": "64Mi"}},
		},
	}
}

// container runs `trendfetch run --region R` with the Secret's variables.
func (c CronJobs) container(j Job) kobj {
	env := []kobj{
		{"name": config.Lookup("quota.backend").Env, "value": "redis"},
		{"name": config.Lookup("log.format").Env, "value": "json"},
	}
	for _, s := range c.Env {
		ref := kobj{"name": Name, "key": s.Key}
		if s.Optional {
			ref["optional"] = true
		}
		env = append(env, kobj{"name": s.Env, "valueFrom": kobj{"secretKeyRef": ref}})
	}
	args := append([]string{"--config", ConfigDir + "/trendfetch.yaml"}, c.Flags...)
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
			{"name": "config", "mountPath": ConfigDir, "readOnly": true},
			{"name": "tmp", "mountPath": "/tmp"},
		},
	}
}

// projected is the config volume: the ConfigMap's trendfetch.yaml and each of Files at its
// path, 0440 (group fsGroup: the pod's user reads them, nobody else).
func (c CronJobs) projected() kobj {
	sources := []kobj{{"configMap": kobj{"name": Name, "items": []kobj{{"key": "trendfetch.yaml", "path": "trendfetch.yaml"}}}}}
	if len(c.Files) > 0 {
		var items []kobj
		for _, f := range c.Files {
			items = append(items, kobj{"key": f.Key, "path": strings.TrimPrefix(f.Path, ConfigDir+"/")})
		}
		sources = append(sources, kobj{"secret": kobj{"name": Name, "items": items}})
	}
	return kobj{"defaultMode": 0o440, "sources": sources}
}

// kobj is a Kubernetes object or field map; yaml.v3 writes map keys sorted.
type kobj = map[string]any
