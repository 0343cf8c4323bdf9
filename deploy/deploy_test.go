package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dfparser "github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// docs splits a multi-document YAML file.
func docs(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var out [][]byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(bytes.TrimSpace(d)) > 0 {
			out = append(out, d)
		}
	}
}

// objects decodes every manifest strictly into its Kubernetes type: an unknown or misspelt field,
// a wrong type or an unknown kind fails.
type objects struct {
	deployments  map[string]*appsv1.Deployment
	statefulSets map[string]*appsv1.StatefulSet
	services     map[string]*corev1.Service
	configMaps   map[string]*corev1.ConfigMap
	secrets      map[string]*corev1.Secret
	pdbs         map[string]*policyv1.PodDisruptionBudget
}

func load(t *testing.T) objects {
	t.Helper()
	o := objects{map[string]*appsv1.Deployment{}, map[string]*appsv1.StatefulSet{}, map[string]*corev1.Service{},
		map[string]*corev1.ConfigMap{}, map[string]*corev1.Secret{}, map[string]*policyv1.PodDisruptionBudget{}}
	files, _ := filepath.Glob("kubernetes/*.yaml")
	if len(files) == 0 {
		t.Fatal("no manifests in kubernetes/")
	}
	for _, f := range files {
		for i, d := range docs(t, f) {
			var head struct{ APIVersion, Kind string }
			if err := yaml.Unmarshal(d, &head); err != nil {
				t.Fatalf("%s #%d: %v", f, i, err)
			}
			var obj any
			var name func() string
			switch head.APIVersion + " " + head.Kind {
			case "apps/v1 Deployment":
				v := &appsv1.Deployment{}
				obj, name = v, func() string { o.deployments[v.Name] = v; return v.Name }
			case "apps/v1 StatefulSet":
				v := &appsv1.StatefulSet{}
				obj, name = v, func() string { o.statefulSets[v.Name] = v; return v.Name }
			case "v1 Service":
				v := &corev1.Service{}
				obj, name = v, func() string { o.services[v.Name] = v; return v.Name }
			case "v1 ConfigMap":
				v := &corev1.ConfigMap{}
				obj, name = v, func() string { o.configMaps[v.Name] = v; return v.Name }
			case "v1 Secret":
				v := &corev1.Secret{}
				obj, name = v, func() string { o.secrets[v.Name] = v; return v.Name }
			case "policy/v1 PodDisruptionBudget":
				v := &policyv1.PodDisruptionBudget{}
				obj, name = v, func() string { o.pdbs[v.Name] = v; return v.Name }
			default:
				t.Fatalf("%s #%d: %s %s is not a kind this check knows", f, i, head.APIVersion, head.Kind)
			}
			if err := yaml.UnmarshalStrict(d, obj); err != nil {
				t.Fatalf("%s #%d (%s): %v", f, i, head.Kind, err)
			}
			if n := name(); n == "" {
				t.Fatalf("%s #%d: %s without metadata.name", f, i, head.Kind)
			}
		}
	}
	return o
}

// TestManifests: the manifests decode strictly into the Kubernetes API types, selectors match
// their pods, services and probes name real ports and voiced's probe routes, the grace period
// outlasts voiced's own shutdown, and every VOICED_* variable names a real flag.
func TestManifests(t *testing.T) {
	o := load(t)
	for name, d := range o.deployments {
		checkSelector(t, "Deployment "+name, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}
	for name, s := range o.statefulSets {
		checkSelector(t, "StatefulSet "+name, s.Spec.Selector.MatchLabels, s.Spec.Template.Labels)
	}
	for name, s := range o.services {
		matched := false
		for _, d := range o.deployments {
			matched = matched || subset(s.Spec.Selector, d.Spec.Template.Labels)
		}
		for _, d := range o.statefulSets {
			matched = matched || subset(s.Spec.Selector, d.Spec.Template.Labels)
		}
		if !matched {
			t.Errorf("Service %s selects no pods (%v)", name, s.Spec.Selector)
		}
	}
	for name, p := range o.pdbs {
		if _, ok := o.deployments[name]; !ok || !subset(p.Spec.Selector.MatchLabels, o.deployments[name].Spec.Template.Labels) {
			t.Errorf("PodDisruptionBudget %s does not select its Deployment's pods", name)
		}
	}

	d := o.deployments["voiced"]
	if d == nil {
		t.Fatal("no Deployment voiced")
	}
	c := d.Spec.Template.Spec.Containers[0]
	ports := map[string]bool{}
	for _, p := range c.Ports {
		ports[p.Name] = true
	}
	for what, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s probe missing or not HTTP", what)
			continue
		}
		want := "/health/live"
		if what == "readiness" {
			want = "/health/ready"
		}
		if p.HTTPGet.Path != want || !ports[p.HTTPGet.Port.String()] {
			t.Errorf("%s probe GET %s on %s, want %s on a declared port", what, p.HTTPGet.Path, p.HTTPGet.Port.String(), want)
		}
	}
	cm := o.configMaps["voiced"]
	if cm == nil {
		t.Fatal("no ConfigMap voiced")
	}
	grace, err := time.ParseDuration(cm.Data["VOICED_SHUTDOWN_GRACE"])
	if err != nil {
		t.Fatalf("VOICED_SHUTDOWN_GRACE: %v", err)
	}
	delay, _ := time.ParseDuration(cm.Data["VOICED_DRAIN_DELAY"])
	tg := d.Spec.Template.Spec.TerminationGracePeriodSeconds
	if tg == nil || time.Duration(*tg)*time.Second <= grace+delay {
		t.Errorf("terminationGracePeriodSeconds %v must exceed --shutdown-grace %v + --drain-delay %v (else the kubelet kills open conversations)", tg, grace, delay)
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "models" && (v.PersistentVolumeClaim == nil || !v.PersistentVolumeClaim.ReadOnly) {
			t.Error("the models volume must be read-only")
		}
	}

	// Every VOICED_* variable the manifests set is one voiced reads (voiced serve -h lists them).
	bin := os.Getenv("VOICED_BIN")
	if bin == "" {
		t.Log("VOICED_BIN is not set (make test sets it): the variable names are not checked against the binary")
		return
	}
	help, err := exec.Command(bin, "serve", "-h").CombinedOutput()
	if err != nil {
		t.Fatalf("%s serve -h: %v\n%s", bin, err, help)
	}
	names := map[string]bool{}
	for k := range cm.Data {
		names[k] = true
	}
	for _, e := range c.Env {
		names[e.Name] = true
	}
	for _, s := range o.secrets {
		for k := range s.StringData {
			names[k] = true
		}
	}
	for n := range names {
		if strings.HasPrefix(n, "VOICED_") && n != "VOICED_TOKEN" && !strings.Contains(string(help), "["+n+"]") {
			t.Errorf("%s is set in the manifests but voiced serve -h does not list it", n)
		}
	}
}

func checkSelector(t *testing.T, what string, sel, labels map[string]string) {
	if len(sel) == 0 || !subset(sel, labels) {
		t.Errorf("%s: selector %v does not match its pod labels %v", what, sel, labels)
	}
}

func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

var metricName = regexp.MustCompile(`\b(voiced_[a-z_]+?)(_bucket|_sum|_count)?\b`)

// TestAlertRules: the rules parse with Prometheus's own parser (PromQL included), and every voiced
// series they name is one the README's Metrics table documents.
func TestAlertRules(t *testing.T) {
	files, _ := filepath.Glob("prometheus/*.yaml")
	if len(files) == 0 {
		t.Fatal("no rules in prometheus/")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		groups, errs := rulefmt.ParseFile(f, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
		for _, e := range errs {
			t.Errorf("%s: %v", f, e)
		}
		if groups == nil {
			continue
		}
		n := 0
		for _, g := range groups.Groups {
			for _, r := range g.Rules {
				n++
				for _, m := range metricName.FindAllStringSubmatch(r.Expr, -1) {
					if !bytes.Contains(readme, []byte("`"+m[1]+"`")) {
						t.Errorf("%s: rule %s uses %s, which README's Metrics table does not list", f, r.Alert, m[1])
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("%s has no rules", f)
		}
	}
}

// TestDockerfile: the Dockerfile parses with BuildKit's own parser and linter rules, and its build
// stage runs the same make targets as CI (.ci/run: make setup; make test builds with make build),
// so what CI proves is what the image is built from.
func TestDockerfile(t *testing.T) {
	f, err := os.Open("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := dfparser.Parse(f)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	for _, w := range res.Warnings {
		t.Errorf("Dockerfile: %s", w.Short)
	}
	var runs []string
	stages, user, entry := 0, "", ""
	for _, n := range res.AST.Children {
		switch strings.ToLower(n.Value) {
		case "from":
			stages++
		case "run":
			runs = append(runs, n.Original)
		case "user":
			user = n.Next.Value
		case "entrypoint":
			entry = n.Original
		}
	}
	all := strings.Join(runs, "\n")
	ci, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"make setup", "make build"} {
		if !strings.Contains(all, target) {
			t.Errorf("the Dockerfile does not run %q", target)
		}
	}
	if !strings.Contains(string(ci), "make setup") {
		t.Error(".ci/run no longer runs make setup: the image and CI would build differently")
	}
	if stages < 2 || user == "" || user == "root" || user == "0" || !strings.Contains(entry, "voiced") {
		t.Errorf("want a multi-stage build running voiced as a non-root user: %d stages, USER %q, %s", stages, user, entry)
	}
}
