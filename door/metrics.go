package door

import "errors"

// Series names and help texts the conversation (package session) and the speech doors share: both
// register voiced_sessions_open and voiced_sessions_refused_total, told apart by the constant label
// kind.
const (
	MetricSessionsOpen        = "voiced_sessions_open"
	MetricSessionsOpenHelp    = "Sessions open now, by kind (speech, conversation) and door."
	MetricSessionsRefused     = "voiced_sessions_refused_total"
	MetricSessionsRefusedHelp = "Sessions refused before they opened, by kind and reason (cap, tenant_cap, not_warm, not_mounted, quota, auth, origin, shutting_down)."
)

// Refusal reasons, the label values of voiced_sessions_refused_total (Refusal.Reason).
const (
	ReasonCap          = "cap"
	ReasonTenantCap    = "tenant_cap"
	ReasonNotWarm      = "not_warm"
	ReasonNotMounted   = "not_mounted"
	ReasonQuota        = "quota"
	ReasonAuth         = "auth"
	ReasonOrigin       = "origin"
	ReasonShuttingDown = "shutting_down"
)

// LatencyBuckets (seconds) suit a stage measured against the 300 ms bar: 5 ms to 10 s.
var LatencyBuckets = []float64{.005, .01, .025, .05, .1, .2, .3, .5, .75, 1, 1.5, 2, 3, 5, 10}

// ReasonFor is the voiced_sessions_refused_total label of a pre-upgrade refusal, "" for one that is
// not counted (a bad request, an error that is not a Refusal).
func ReasonFor(err error) string {
	var r *Refusal
	if !errors.As(err, &r) {
		return ""
	}
	return r.Reason()
}
