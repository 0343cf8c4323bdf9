package assets

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeMount writes a small, valid mount: every required file with distinct content and a manifest.
func writeMount(t testing.TB, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	for i, rel := range append(append([]string(nil), RequiredFiles...), extra...) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("file %d: %s\n", i, rel)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteManifest(dir, "test-assets-1"); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readManifest(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeManifest(t *testing.T, dir, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// editManifest rewrites the manifest through fn.
func editManifest(fn func(string) string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) { writeManifest(t, dir, fn(readManifest(t, dir))) }
}

// dropLine removes the manifest line for rel.
func dropLine(rel string) func(string) string {
	return func(m string) string {
		var keep []string
		for _, l := range strings.SplitAfter(m, "\n") {
			if !strings.HasSuffix(strings.TrimSuffix(l, "\n"), "  "+rel) {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "")
	}
}

func TestOpenRefusals(t *testing.T) {
	const zeros = "0000000000000000000000000000000000000000000000000000000000000000"
	tests := []struct {
		name   string
		mutate func(t *testing.T, dir string)
		want   error
		file   string // the file the refusal must name
	}{
		{"mount directory missing", func(t *testing.T, dir string) { os.RemoveAll(dir) }, ErrMountMissing, "."},
		{"manifest missing", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, ManifestName)) }, ErrManifestMissing, ManifestName},
		{"no version line", editManifest(func(m string) string { return strings.Replace(m, "# version: test-assets-1\n", "", 1) }), ErrNoVersion, ManifestName},
		{"two version lines", editManifest(func(m string) string { return m + "# version: other\n" }), ErrTwoVersions, ManifestName},
		{"empty version", editManifest(func(m string) string { return strings.Replace(m, "test-assets-1", " ", 1) }), ErrNoVersion, ManifestName},
		{"malformed line", editManifest(func(m string) string { return m + "abc123  models/x\n" }), ErrManifestMalformed, ManifestName},
		{"one space separator", editManifest(func(m string) string { return m + zeros + " models/x\n" }), ErrManifestMalformed, ManifestName},
		{"absolute path", editManifest(func(m string) string { return m + zeros + "  /etc/passwd\n" }), ErrPathEscapes, "/etc/passwd"},
		{"path escapes upward", editManifest(func(m string) string { return m + zeros + "  models/../../secret\n" }), ErrPathEscapes, "models/../../secret"},
		{"duplicate line", editManifest(func(m string) string {
			return m + strings.SplitAfter(m, "\n")[2]
		}), ErrDuplicateEntry, KokoroDir + "/config.json"},
		{"required file unlisted", editManifest(dropLine(SileroModel)), ErrRequiredUnlisted, SileroModel},
		{"listed file missing", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, filepath.FromSlash(KokoroDir+"/model.onnx")))
		}, ErrFileMissing, KokoroDir + "/model.onnx"},
		{"digest mismatch", func(t *testing.T, dir string) {
			p := filepath.Join(dir, filepath.FromSlash(WhisperDir+"/tokenizer.json"))
			os.WriteFile(p, []byte("half-synced"), 0o644)
		}, ErrDigestMismatch, WhisperDir + "/tokenizer.json"},
		{"voice without manifest line", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, filepath.FromSlash(VoicesDir+"/am_adam.bin")), []byte("unproved voice"), 0o644)
		}, ErrUnlistedVoice, VoicesDir + "/am_adam.bin"},
		{"symlink leads out of the mount", func(t *testing.T, dir string) {
			outside := filepath.Join(t.TempDir(), "outside.json")
			os.WriteFile(outside, []byte("outside"), 0o644)
			p := filepath.Join(dir, filepath.FromSlash(WhisperDir+"/config.json"))
			os.Remove(p)
			if err := os.Symlink(outside, p); err != nil {
				t.Fatal(err)
			}
		}, ErrPathEscapes, WhisperDir + "/config.json"},
		{"listed path is a directory", editManifest(func(m string) string { return m + zeros + "  " + WhisperDir + "\n" }), ErrFileUnreadable, WhisperDir},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeMount(t)
			tc.mutate(t, dir)
			m, err := Open(dir)
			if err == nil {
				t.Fatalf("Open accepted the mount (version %q); want %v", m.Version, tc.want)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open: %v; want %v", err, tc.want)
			}
			var ae *Error
			if !errors.As(err, &ae) {
				t.Fatalf("Open: %T is not *assets.Error", err)
			}
			if ae.File != tc.file {
				t.Errorf("refusal names %q, want %q", ae.File, tc.file)
			}
			if ae.Cure == "" {
				t.Errorf("refusal has no cure: %v", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.file) || !strings.Contains(msg, "cure:") {
				t.Errorf("text %q does not name the file and the cure", msg)
			}
		})
	}
}

func TestOpenAccepts(t *testing.T) {
	const lexicon = LexiconDir + "/us_gold.json"
	tests := []struct {
		name       string
		extra      []string
		mutate     func(t *testing.T, dir string)
		wantVoices []string
		wantFiles  int
	}{
		{"minimal mount", nil, nil, []string{"af_heart"}, len(RequiredFiles)},
		{"lexicon and a second voice", []string{lexicon, VoicesDir + "/bf_emma.bin"}, nil, []string{"af_heart", "bf_emma"}, len(RequiredFiles) + 2},
		{"binary-mode marker", nil, editManifest(func(m string) string { return strings.ReplaceAll(m, "  models/", " *models/") }), []string{"af_heart"}, len(RequiredFiles)},
		{"upper-case digests and CRLF", nil, editManifest(func(m string) string {
			var out []string
			for _, l := range strings.Split(strings.TrimSuffix(m, "\n"), "\n") {
				if !strings.HasPrefix(l, "#") {
					l = strings.ToUpper(l[:64]) + l[64:]
				}
				out = append(out, l+"\r\n")
			}
			return strings.Join(out, "")
		}), []string{"af_heart"}, len(RequiredFiles)},
		{"comments and blank lines", nil, editManifest(func(m string) string { return "\n# built by hand\n" + m + "\n\n" }), []string{"af_heart"}, len(RequiredFiles)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeMount(t, tc.extra...)
			if tc.mutate != nil {
				tc.mutate(t, dir)
			}
			m, err := Open(dir)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if m.Version != "test-assets-1" {
				t.Errorf("Version %q", m.Version)
			}
			if fmt.Sprint(m.Voices()) != fmt.Sprint(tc.wantVoices) {
				t.Errorf("Voices %v, want %v", m.Voices(), tc.wantVoices)
			}
			if m.FilesProved() != tc.wantFiles {
				t.Errorf("FilesProved %d, want %d", m.FilesProved(), tc.wantFiles)
			}
			want, err := HashFile(m.Path(SileroModel))
			if err != nil {
				t.Fatal(err)
			}
			if m.Digest(SileroModel) != want {
				t.Errorf("Digest(%s) = %q, want %q", SileroModel, m.Digest(SileroModel), want)
			}
			if !filepath.IsAbs(m.Dir) {
				t.Errorf("Dir %q is not absolute", m.Dir)
			}
			if got := m.Has(lexicon); got != (len(tc.extra) > 0) {
				t.Errorf("Has(lexicon) = %v", got)
			}
		})
	}
}

// Verify reports every problem, not just the first, and a verdict per line.
func TestVerifyReportsEveryProblem(t *testing.T) {
	dir := writeMount(t)
	os.WriteFile(filepath.Join(dir, filepath.FromSlash(KokoroDir+"/config.json")), []byte("x"), 0o644)
	os.Remove(filepath.Join(dir, filepath.FromSlash(SileroModel)))
	rep := Verify(dir)
	if len(rep.Verdicts) != len(RequiredFiles) {
		t.Fatalf("%d verdicts, want %d", len(rep.Verdicts), len(RequiredFiles))
	}
	if len(rep.Problems) != 2 {
		t.Fatalf("problems %v, want two", rep.Problems)
	}
	for i, want := range []error{ErrDigestMismatch, ErrFileMissing} { // manifest order: kokoro before silero
		if !errors.Is(rep.Problems[i], want) {
			t.Errorf("problem %d: %v, want %v", i, rep.Problems[i], want)
		}
	}
	failed := 0
	for _, v := range rep.Verdicts {
		if v.Err != nil {
			failed++
		}
	}
	if failed != 2 {
		t.Errorf("%d failed verdicts, want 2", failed)
	}
}

// sha256sum -c accepts what WriteManifest writes: the manifest really is GNU format.
func TestManifestIsGNUFormat(t *testing.T) {
	if _, err := os.Stat("/usr/bin/sha256sum"); err != nil {
		t.Skip("sha256sum is not installed (Debian package coreutils)")
	}
	dir := writeMount(t)
	out, err := runSha256sum(dir)
	if err != nil {
		t.Fatalf("sha256sum -c: %v\n%s", err, out)
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte("# version: v1\n" + strings.Repeat("a", 64) + "  models/x\n"))
	f.Add([]byte("# version: v1\n# version: v2\n"))
	f.Add([]byte(strings.Repeat("A", 64) + " *../x\r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		entries, version, problems := ParseManifest(raw)
		if len(problems) == 0 && version == "" {
			t.Fatal("no problem reported but no version")
		}
		for _, e := range entries {
			if !validRel(e.Path) || len(e.Digest) != 64 || strings.ToLower(e.Digest) != e.Digest {
				t.Fatalf("accepted entry %+v", e)
			}
		}
		for _, p := range problems {
			if p.Err == nil || p.File == "" || p.Cure == "" {
				t.Fatalf("incomplete refusal %+v", p)
			}
		}
	})
}
