package main

import (
	"cmp"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
)

// podSpec is what a pod runtime reads of a generated CronJob's pod template.
type podSpec struct {
	SecurityContext struct {
		RunAsUser  int `yaml:"runAsUser"`
		RunAsGroup int `yaml:"runAsGroup"`
		FSGroup    int `yaml:"fsGroup"`
	} `yaml:"securityContext"`
	Containers []struct {
		Command, Args []string
		Env           []struct {
			Name      string
			Value     *string
			ValueFrom *struct {
				SecretKeyRef struct{ Name, Key string } `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		}
		VolumeMounts []struct {
			MountPath string `yaml:"mountPath"`
			Name      string
			ReadOnly  bool `yaml:"readOnly"`
		} `yaml:"volumeMounts"`
		SecurityContext struct {
			ReadOnlyRootFilesystem bool `yaml:"readOnlyRootFilesystem"`
		} `yaml:"securityContext"`
	}
	Volumes []struct {
		Name      string
		EmptyDir  *struct{} `yaml:"emptyDir"`
		Projected *struct {
			DefaultMode int `yaml:"defaultMode"`
			Sources     []struct {
				ConfigMap *projection `yaml:"configMap"`
				Secret    *projection
			}
		}
	}
}

// projection is a projected volume's source: the items of a ConfigMap or Secret.
type projection struct {
	Name  string
	Items []struct{ Key, Path string }
}

// TestCronJobRunsAsThePod: each CronJob that `crontab --format kubernetes` generates for the
// README's several-hosts configuration (the database, Redis and check-in URLs as files under
// /etc/trendfetch), run as its pod would run it (the container's command and arguments, only
// the manifest's environment, the ConfigMap and Secret mounted at the manifest's paths with
// their modes and fsGroup, an emptyDir /tmp, the root file system read-only, UID and GID
// 65532) against the emulator, a real redis-server and a real PostgreSQL, exits 0 with a
// capture, spends through Redis and sends its check-ins.
func TestCronJobRunsAsThePod(t *testing.T) {
	requirePodTools(t)
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	emu.SetChart("GB", youtubetest.Sample())
	api := emu.StartTest(t)
	var mu sync.Mutex
	var pings []string
	hc := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		pings = append(pings, r.URL.Path)
	}))
	defer hc.Close()
	rdb := redistest.Start(t)
	pgsrv, dbURL := pgDatabase(t)

	const key = "AIzaPodKey7f3q9"
	dir := podDir(t)
	secret := map[string]string{"database-url": dbURL, "redis-url": rdb.URL(), "checkin-url": hc.URL + "/ping", "youtube-api-key": key}
	config := "regions: [US, GB]\napi: {endpoint: " + api + "}\n" +
		"store: {url_file: /etc/trendfetch/database-url}\n" +
		"quota: {backend: redis, redis: {url_file: /etc/trendfetch/redis-url}}\n" +
		"runs: {checkin_url_file: /etc/trendfetch/checkin-url}\n"
	// Generated again with TRENDFETCH_DATABASE set (issue 39 item 1): the pods get the Secret's
	// database-url as $TRENDFETCH_DATABASE, which wins over the ConfigMap's store.url_file.
	_, envDB := pgDatabase(t)
	for _, db := range []string{"", envDB} {
		if db != "" {
			secret["database-url"] = db
		}
		manifests := generateCronJobs(t, dir, config, secret, db)
		if out := validateManifests(t, manifests); !strings.Contains(out, "2 valid") {
			t.Errorf("kubernetes-models: %s", out)
		}
		for i, pod := range cronJobPods(t, manifests) {
			if out, err := runPod(t, dir, pod, secret, map[string]string{"trendfetch.yaml": config}); err != nil {
				t.Fatalf("pod %d (TRENDFETCH_DATABASE %t): %v\n%s", i, db != "", err, out)
			}
		}
		captures, err := pgsrv.Psql(cmp.Or(db, dbURL), "-tAc", "SELECT string_agg(region, ',' ORDER BY region) FROM captures")
		if err != nil || strings.TrimSpace(captures) != "GB,US" {
			t.Errorf("captures in PostgreSQL (TRENDFETCH_DATABASE %t): %q, %v; want GB,US", db != "", captures, err)
		}
	}
	if emu.Units(key) == 0 || rdb.Do("DBSIZE") == "0" {
		t.Errorf("units spent with the Secret's key %d; Redis keys %s", emu.Units(key), rdb.Do("DBSIZE"))
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(strings.Join(pings, " "), "/ping/0"); n != 4 {
		t.Errorf("check-ins %v: want a success (/ping/0) from each pod", pings)
	}
}

// requirePodTools fails the test under CI=true, else skips it, when this process cannot make
// a pod's file system (root, unshare, setpriv, an overlay mount).
func requirePodTools(t *testing.T) {
	t.Helper()
	err := errors.New("not root")
	if os.Geteuid() == 0 {
		_, err = exec.Command("unshare", "-m", "sh", "-c", "setpriv --help >/dev/null && mount -t tmpfs tmpfs /mnt").CombinedOutput()
	}
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("running a pod's container needs root, unshare(1), setpriv(1) and mounts in CI (CI=true): %v", err)
	}
	t.Skipf("cannot make a pod's file system here: %v", err)
}

// podDir is a directory outside /tmp (the pod mounts its own) that UID 65532 can enter.
func podDir(t *testing.T) string {
	dir, err := os.MkdirTemp("/var/lib", "tf-pod-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, binary, filepath.Join(dir, "bin", "trendfetch"), 0o755)
	return dir
}

// generateCronJobs runs `crontab --format kubernetes` as an operator would: with the
// configuration and the files it names at their paths under /etc/trendfetch (root's, 0600, in
// a mount namespace of its own) and the API key in the environment.
func generateCronJobs(t *testing.T, dir, config string, secret map[string]string, envDB string) string {
	t.Helper()
	stage := filepath.Join(dir, "operator")
	writeFiles(t, stage, map[string]string{"trendfetch.yaml": config, "database-url": secret["database-url"],
		"redis-url": secret["redis-url"], "checkin-url": secret["checkin-url"]}, 0o600)
	script := overlayEtc + `cp -a "$1"/. /etc/trendfetch/
exec "$2" --config /etc/trendfetch/trendfetch.yaml crontab --format kubernetes --image registry.example.com/trendfetch:1`
	cmd := exec.Command("unshare", "-m", "sh", "-ec", script, "sh", stage, filepath.Join(dir, "bin", "trendfetch"))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "YOUTUBE_API_KEY=" + secret["youtube-api-key"]}
	if envDB != "" {
		cmd.Env = append(cmd.Env, "TRENDFETCH_DATABASE="+envDB)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crontab --format kubernetes: %v\n%s", err, out)
	}
	return string(out)
}

// overlayEtc is sh that, in a mount namespace, gives /etc a writable layer and an empty
// /etc/trendfetch without touching the host's.
const overlayEtc = `mount --make-rprivate /
w=/mnt
mount -t tmpfs tmpfs "$w"
mkdir "$w/up" "$w/work"
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$w/up,workdir=$w/work" /etc
mkdir -p /etc/trendfetch
`

// cronJobPods decodes each CronJob's pod template.
func cronJobPods(t *testing.T, manifests string) []podSpec {
	t.Helper()
	var pods []podSpec
	dec := yaml.NewDecoder(strings.NewReader(manifests))
	for {
		var cj struct {
			Spec struct {
				JobTemplate struct {
					Spec struct{ Template struct{ Spec podSpec } }
				} `yaml:"jobTemplate"`
			}
		}
		if err := dec.Decode(&cj); errors.Is(err, io.EOF) {
			return pods
		} else if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, cj.Spec.JobTemplate.Spec.Template.Spec)
	}
}

// runPod runs pod's one container as a pod runtime would, in a mount namespace: its volumes
// staged under dir from the Secret and the ConfigMap data and mounted at their paths, the
// image's trendfetch on PATH, the root file system read-only, as the pod's user and groups,
// with only the manifest's environment (secretKeyRef values from secret).
func runPod(t *testing.T, dir string, pod podSpec, secret, configMap map[string]string) (string, error) {
	t.Helper()
	if len(pod.Containers) != 1 || !pod.Containers[0].SecurityContext.ReadOnlyRootFilesystem {
		t.Fatalf("want one container with a read-only root file system: %+v", pod.Containers)
	}
	c := pod.Containers[0]
	script := overlayEtc + "mount --bind -o ro " + filepath.Join(dir, "bin") + " /usr/local/bin\n"
	for _, m := range c.VolumeMounts {
		script += mountVolume(t, dir, pod, m.Name, m.MountPath, secret, configMap)
	}
	sc := pod.SecurityContext
	script += "mount -o remount,bind,ro /etc\nmount -o remount,bind,ro /\ncd /\n" +
		"exec setpriv --reuid=" + strconv.Itoa(sc.RunAsUser) + " --regid=" + strconv.Itoa(sc.RunAsGroup) +
		" --groups=" + strconv.Itoa(sc.FSGroup) + " --inh-caps=-all --no-new-privs env -i \"$@\"\n"
	argv := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=trendfetch-pod", "HOME=/"}
	for _, e := range c.Env {
		v := ""
		if e.Value != nil {
			v = *e.Value
		} else if e.ValueFrom != nil {
			v = secret[e.ValueFrom.SecretKeyRef.Key]
		}
		argv = append(argv, e.Name+"="+v)
	}
	argv = append(append(argv, c.Command...), c.Args...)
	out, err := exec.Command("unshare", append([]string{"-m", "sh", "-ec", script, "sh"}, argv...)...).CombinedOutput()
	return string(out), err
}

// mountVolume stages the pod's volume name (a projected ConfigMap and Secret, or an emptyDir)
// and returns the sh that mounts it at path.
func mountVolume(t *testing.T, dir string, pod podSpec, name, path string, secret, configMap map[string]string) string {
	t.Helper()
	for _, v := range pod.Volumes {
		switch {
		case v.Name != name:
		case v.EmptyDir != nil:
			return "mount -t tmpfs -o mode=1777,size=64m tmpfs " + path + "\n"
		case v.Projected != nil:
			stage := filepath.Join(dir, "volume-"+name)
			for _, src := range v.Projected.Sources {
				data, ref := secret, src.Secret
				if src.ConfigMap != nil {
					data, ref = configMap, src.ConfigMap
				}
				for _, it := range ref.Items {
					writeFiles(t, stage, map[string]string{it.Path: data[it.Key]}, os.FileMode(v.Projected.DefaultMode))
					if err := os.Chown(filepath.Join(stage, it.Path), 0, pod.SecurityContext.FSGroup); err != nil {
						t.Fatal(err)
					}
				}
			}
			return "mount --bind -o ro " + stage + " " + path + "\n"
		}
	}
	t.Fatalf("volume %q is not in the pod", name)
	return ""
}

// writeFiles writes each name's content under dir (created 0755) with mode.
func writeFiles(t *testing.T, dir string, files map[string]string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if !regexp.MustCompile(`^[a-z.-]+$`).MatchString(name) {
			t.Fatalf("file name %q", name)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content+"\n"), mode); err != nil || os.Chmod(path, mode) != nil {
			t.Fatal(err)
		}
	}
}
