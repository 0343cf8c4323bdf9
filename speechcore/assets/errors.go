package assets

import (
	"errors"
	"fmt"
)

// Refusals of a mount, matched with errors.Is on an *Error.
var (
	ErrMountMissing      = errors.New("mount directory not found")
	ErrManifestMissing   = errors.New("manifest not found")
	ErrManifestMalformed = errors.New("manifest line malformed")
	ErrNoVersion         = errors.New("manifest has no version line")
	ErrTwoVersions       = errors.New("manifest has more than one version line")
	ErrPathEscapes       = errors.New("manifest path is absolute or escapes the mount")
	ErrDuplicateEntry    = errors.New("manifest lists a file twice")
	ErrRequiredUnlisted  = errors.New("required file has no manifest line")
	ErrFileMissing       = errors.New("listed file missing")
	ErrFileUnreadable    = errors.New("listed file unreadable")
	ErrDigestMismatch    = errors.New("digest mismatch")
	ErrUnlistedVoice     = errors.New("voice file has no manifest line")
)

// Error is one refusal of a mount: which file failed, what is wrong, and how to cure it. Its text
// is meant for the operator reading the start-up log.
type Error struct {
	Mount   string // the mount directory as named
	File    string // the failing file, relative to the mount (MODELS.sha256 for manifest problems)
	Err     error  // one of the sentinels above
	Problem string // detail: the line, the digests, the OS error
	Cure    string // what the operator does about it
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("speech asset mount %s refused: %s: %v", e.Mount, e.File, e.Err)
	if e.Problem != "" {
		msg += " (" + e.Problem + ")"
	}
	if e.Cure != "" {
		msg += "; cure: " + e.Cure
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

const checkByHand = "then run `sha256sum -c " + ManifestName + "` in the mount to check it by hand"
