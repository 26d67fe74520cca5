package release

import "testing"

func TestConstraintCovers(t *testing.T) {
	tests := []struct {
		c, v         string
		check, cover bool
	}{
		{"< v1.2", "v1.1-rc.1", false, true},
		{"< v1.2", "v1.1", true, true},
		{"< v1.2", "v1.2-rc.1", false, true},
		{"< v1.2", "v1.2", false, false},
		{">= v1.1-rc.1, < v1.3", "v1.1-rc.2", true, true},
		{">= v1.1-rc.1, < v1.3", "v1.2-rc.1", false, true},
		{"v1.1-rc.1", "v1.1-rc.1", true, true},
		{"v1.1", "v1.1-rc.1", false, false},
		{"*", "v9.9-rc.1", false, true},
		{"< v1.0 || > v2.0", "v2.1-rc.1", false, true},
		{"!= v1.1", "v1.1", false, false},
	}
	for _, tt := range tests {
		c, v := MustParseConstraint(tt.c), MustParseVersion(tt.v)
		if got := c.Check(v); got != tt.check {
			t.Errorf("Constraint(%q).Check(%s) = %v, want %v", tt.c, tt.v, got, tt.check)
		}
		if got := c.Covers(v); got != tt.cover {
			t.Errorf("Constraint(%q).Covers(%s) = %v, want %v", tt.c, tt.v, got, tt.cover)
		}
	}
	if MustParseConstraint("*").Covers(Version{}) {
		t.Error("Covers(zero Version) = true, want false")
	}
}
