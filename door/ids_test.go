package door

import (
	"strings"
	"testing"
)

func TestNodeIDs(t *testing.T) {
	id := NewID("tr_", "node-a", 16)
	if !strings.HasPrefix(id, "tr_node-a.") || len(id) != len("tr_node-a.")+32 {
		t.Fatalf("NewID = %q", id)
	}
	if got := IDNode("tr_", id); got != "node-a" {
		t.Errorf("IDNode(%q) = %q", id, got)
	}
	if a, b := NewID("tr_", "", 8), NewID("tr_", "", 8); a == b || IDNode("tr_", a) != "" {
		t.Errorf("node-less ids %q, %q", a, b)
	}
	for _, id := range []string{"rtc_node-a.00", "tr_00ff", "", "tr_"} {
		if got := IDNode("tr_", id); got != "" {
			t.Errorf("IDNode(%q) = %q, want none", id, got)
		}
	}
}
