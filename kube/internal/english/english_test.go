package english_test

import (
	"fmt"
	"testing"

	"github.com/hopdag/hopdag/kube/internal/english"
)

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n          int
		word, want string
	}{
		{1, "hop", "hop"},
		{0, "hop", "hops"},
		{2, "hop", "hops"},
		{2, "patch", "patches"},
		{2, "class", "classes"},
		{2, "box", "boxes"},
		{1, "patch", "patch"},
		{-1, "hop", "hops"},
	} {
		if got := english.Plural(tc.n, tc.word); got != tc.want {
			t.Errorf("Plural(%d, %q) = %q, want %q", tc.n, tc.word, got, tc.want)
		}
	}
}

func TestChoose(t *testing.T) {
	if got := english.Choose(1, "is a", "are"); got != "is a" {
		t.Errorf("Choose(1) = %q", got)
	}
	if got := english.Choose(3, "is a", "are"); got != "are" {
		t.Errorf("Choose(3) = %q", got)
	}
}

func ExampleCount() {
	fmt.Println(english.Count(1, "hop"), "/", english.Count(3, "hop"), "/", english.Count(2, "patch"))
	// Output: 1 hop / 3 hops / 2 patches
}
