package assets

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// RequiredFiles must each have a manifest line (SPEC §4). The lexicon files are optional.
var RequiredFiles = []string{
	WhisperDir + "/encoder_model.onnx",
	WhisperDir + "/decoder_model_merged.onnx",
	WhisperDir + "/tokenizer.json",
	WhisperDir + "/config.json",
	WhisperDir + "/generation_config.json",
	KokoroDir + "/model.onnx",
	KokoroDir + "/config.json",
	VoicesDir + "/af_heart.bin",
	SileroModel,
}

// Optional layout files: used when listed, never required.
var OptionalFiles = []string{
	LexiconDir + "/us_gold.json",
	LexiconDir + "/us_silver.json",
}

// Mount is a verified speech-asset mount: every manifest line was hashed and matched.
type Mount struct {
	Dir     string // absolute mount directory
	Version string // the manifest's "# version:" string, verbatim
	digests map[string]string
	voices  []string
}

// Path returns the absolute path of rel (slash-separated, relative to the mount).
func (m *Mount) Path(rel string) string { return filepath.Join(m.Dir, filepath.FromSlash(rel)) }

// Digest returns the verified hex sha256 of rel, or "" when the manifest does not list it.
func (m *Mount) Digest(rel string) string { return m.digests[rel] }

// Voices returns the selectable voice names (voices/<name>.bin), sorted.
func (m *Mount) Voices() []string { return append([]string(nil), m.voices...) }

// FilesProved counts the manifest lines that were hashed and matched.
func (m *Mount) FilesProved() int { return len(m.digests) }

// Has reports whether the manifest lists rel (for optional files such as the lexicon).
func (m *Mount) Has(rel string) bool { _, ok := m.digests[rel]; return ok }

// Entry is one manifest line.
type Entry struct {
	Path   string // slash-separated, relative to the mount
	Digest string // lower-case hex sha256
	Line   int
}

// Verdict is one manifest line's check.
type Verdict struct {
	Entry
	Got string // the digest measured; "" when the file could not be read
	Err error  // nil when the file matched; an *Error otherwise
}

// Report is a full check of a mount: the manifest, each line's verdict, and the layout checks.
type Report struct {
	Dir      string
	Version  string
	Verdicts []Verdict // in manifest order
	Problems []error   // every refusal found, *Error each, manifest order first
}

// Open verifies dir against every rule of SPEC §4 and returns the mount, or the first refusal
// as an *Error naming the failing file and the cure.
func Open(dir string) (*Mount, error) {
	rep := Verify(dir)
	if len(rep.Problems) > 0 {
		return nil, rep.Problems[0]
	}
	m := &Mount{Dir: rep.Dir, Version: rep.Version, digests: make(map[string]string, len(rep.Verdicts))}
	for _, v := range rep.Verdicts {
		m.digests[v.Path] = v.Got
		if name, ok := voiceName(v.Path); ok {
			m.voices = append(m.voices, name)
		}
	}
	sort.Strings(m.voices)
	return m, nil
}

func voiceName(rel string) (string, bool) {
	if path.Dir(rel) != VoicesDir || !strings.HasSuffix(rel, ".bin") {
		return "", false
	}
	return strings.TrimSuffix(path.Base(rel), ".bin"), true
}

// Verify checks dir and reports every problem it finds (Open stops at the first). It is what
// `voiced assets verify DIR` prints.
func Verify(dir string) *Report {
	rep := &Report{Dir: dir}
	refuse := func(file string, sentinel error, problem, cure string) {
		rep.Problems = append(rep.Problems, &Error{Mount: dir, File: file, Err: sentinel, Problem: problem, Cure: cure})
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		rep.Dir = abs
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		refuse(".", ErrMountMissing, err.Error(), "name an existing directory with --speech-assets or VOICED_SPEECH_ASSETS")
		return rep
	}
	defer root.Close()
	raw, err := root.ReadFile(ManifestName)
	if err != nil {
		refuse(ManifestName, ErrManifestMissing, err.Error(),
			"the mount root must hold the artifact's "+ManifestName+" (a half-synced mount: finish the sync)")
		return rep
	}
	entries, version, manifestProblems := ParseManifest(raw)
	for _, p := range manifestProblems {
		p.Mount = dir
		rep.Problems = append(rep.Problems, p)
	}
	rep.Version = version
	if len(manifestProblems) > 0 {
		return rep
	}
	listed := make(map[string]bool, len(entries))
	for _, e := range entries {
		listed[e.Path] = true
	}
	for _, req := range RequiredFiles {
		if !listed[req] {
			refuse(req, ErrRequiredUnlisted, "",
				"the artifact is incomplete: add "+req+" and its manifest line (layout: README, 'The speech-asset mount')")
		}
	}
	rep.Verdicts = hashAll(dir, root, entries)
	for _, v := range rep.Verdicts {
		if v.Err != nil {
			v.Err.(*Error).Mount = dir
			rep.Problems = append(rep.Problems, v.Err)
		}
	}
	// Every file in voices/ becomes selectable, so each must be proved by a manifest line.
	voices, err := fs.ReadDir(root.FS(), VoicesDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		refuse(VoicesDir, ErrFileUnreadable, err.Error(), "make the voices directory readable by voiced")
	}
	for _, d := range voices {
		rel := VoicesDir + "/" + d.Name()
		if d.IsDir() || listed[rel] {
			continue
		}
		refuse(rel, ErrUnlistedVoice, "",
			"add its line (`sha256sum "+rel+" >> "+ManifestName+"` in the mount) or remove the file")
	}
	return rep
}

// ParseManifest reads a MODELS.sha256 in GNU sha256sum format ("<hex>  <path>" or the binary-mode
// "<hex> *<path>"), with exactly one "# version: <string>" line. Other # lines and blank lines are
// ignored. Problems are *Error values without Mount set.
func ParseManifest(raw []byte) (entries []Entry, version string, problems []*Error) {
	refuse := func(sentinel error, problem, cure string) {
		problems = append(problems, &Error{File: ManifestName, Err: sentinel, Problem: problem, Cure: cure})
	}
	var versionLines []int
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			if v, ok := strings.CutPrefix(line, "# version:"); ok {
				versionLines = append(versionLines, n)
				version = strings.TrimSpace(v)
			}
			continue
		}
		e, err := parseEntry(line, n)
		if err != nil {
			refuse(ErrManifestMalformed, fmt.Sprintf("line %d: %v", n, err),
				fmt.Sprintf("line %d must read `<64 hex digits>  <path>` (GNU sha256sum format)", n))
			continue
		}
		if !validRel(e.Path) {
			problems = append(problems, &Error{File: e.Path, Err: ErrPathEscapes, Problem: fmt.Sprintf("%s line %d", ManifestName, n),
				Cure: "manifest paths are relative to the mount root and stay inside it (models/...)"})
			continue
		}
		if first, dup := seen[e.Path]; dup {
			problems = append(problems, &Error{File: e.Path, Err: ErrDuplicateEntry,
				Problem: fmt.Sprintf("%s lines %d and %d", ManifestName, first, n), Cure: "keep one line per file"})
			continue
		}
		seen[e.Path] = n
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		refuse(ErrManifestMalformed, err.Error(), "regenerate "+ManifestName+" with sha256sum")
	}
	switch {
	case len(versionLines) == 0:
		refuse(ErrNoVersion, "", "add exactly one `# version: <string>` line to "+ManifestName)
	case len(versionLines) > 1:
		refuse(ErrTwoVersions, fmt.Sprintf("lines %v", versionLines), "keep exactly one `# version:` line in "+ManifestName)
	case version == "":
		refuse(ErrNoVersion, fmt.Sprintf("line %d is empty", versionLines[0]), "write the version string after `# version:`")
	}
	if len(versionLines) != 1 {
		version = ""
	}
	return entries, version, problems
}

func parseEntry(line string, n int) (Entry, error) {
	if len(line) < 64+2+1 {
		return Entry{}, errors.New("too short")
	}
	sum := strings.ToLower(line[:64])
	if _, err := hex.DecodeString(sum); err != nil {
		return Entry{}, errors.New("digest is not 64 hex digits")
	}
	if line[64] != ' ' || (line[65] != ' ' && line[65] != '*') {
		return Entry{}, errors.New("digest must be followed by two spaces (or ' *')")
	}
	return Entry{Path: line[66:], Digest: sum, Line: n}, nil
}

// validRel reports whether p is a clean, relative, slash-separated path inside the mount.
func validRel(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || filepath.IsAbs(p) {
		return false
	}
	return fs.ValidPath(p) && p != "."
}

// maxHashWorkers bounds how many files are hashed at once (also by GOMAXPROCS): enough to keep
// a fast disk and every core busy without one reader per file.
var maxHashWorkers = 8

// hashAll hashes every entry, a bounded number of files at a time, and returns the verdicts in
// manifest order.
func hashAll(dir string, root *os.Root, entries []Entry) []Verdict {
	verdicts := make([]Verdict, len(entries))
	workers := min(runtime.GOMAXPROCS(0), maxHashWorkers, len(entries))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1<<20)
			for i := range next {
				verdicts[i] = verify(dir, root, entries[i], buf)
			}
		}()
	}
	for i := range entries {
		next <- i
	}
	close(next)
	wg.Wait()
	return verdicts
}

func verify(dir string, root *os.Root, e Entry, buf []byte) Verdict {
	v := Verdict{Entry: e}
	got, opened, err := hashIn(root, e.Path, buf)
	switch {
	case !opened && errors.Is(err, fs.ErrNotExist):
		v.Err = &Error{File: e.Path, Err: ErrFileMissing, Problem: err.Error(),
			Cure: "the mount is missing a listed file (half-synced?): finish the sync, " + checkByHand}
	case !opened && escapesMount(dir, e.Path):
		v.Err = &Error{File: e.Path, Err: ErrPathEscapes, Problem: err.Error(),
			Cure: "a symbolic link in the mount points outside it: place the file inside the mount"}
	case err != nil:
		v.Err = &Error{File: e.Path, Err: ErrFileUnreadable, Problem: err.Error(),
			Cure: "make it a readable regular file, " + checkByHand}
	case got != e.Digest:
		v.Got = got
		v.Err = &Error{File: e.Path, Err: ErrDigestMismatch, Problem: fmt.Sprintf("manifest %s, file %s", e.Digest, got),
			Cure: "the file is corrupt or half-synced: re-sync it from the artifact, " + checkByHand}
	default:
		v.Got = got
	}
	return v
}

// hashIn hashes rel inside root; opened says whether os.Root let the file be opened at all.
func hashIn(root *os.Root, rel string, buf []byte) (sum string, opened bool, err error) {
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", true, err
	}
	if !st.Mode().IsRegular() {
		return "", true, fmt.Errorf("%s is not a regular file", rel)
	}
	h := sha256.New()
	if _, err := io.CopyBuffer(h, struct{ io.Reader }{f}, buf); err != nil {
		return "", true, err
	}
	return hex.EncodeToString(h.Sum(nil)), true, nil
}

// escapesMount reports whether rel, with its symbolic links resolved, lies outside dir.
func escapesMount(dir, rel string) bool {
	base, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	target, err := filepath.EvalSymlinks(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return false
	}
	inside, err := filepath.Rel(base, target)
	return err != nil || inside == ".." || strings.HasPrefix(inside, ".."+string(filepath.Separator))
}
