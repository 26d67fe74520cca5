package rollout

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Amount is a number of clusters, or a percentage of the fleet: "3" or
// "25%", as Kubernetes' maxUnavailable is written.
type Amount struct {
	N       int
	Percent bool
}

// ParseAmount reads "3" or "25%"; "" is the zero Amount.
func ParseAmount(s string) (Amount, error) {
	if s == "" {
		return Amount{}, nil
	}
	num, pct := strings.CutSuffix(s, "%")
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || pct && n > 100 {
		return Amount{}, fmt.Errorf("amount %q: write a count of clusters (e.g. 3) or a percentage of the fleet from 0%% to 100%% (e.g. 25%%)", s)
	}
	return Amount{N: n, Percent: pct}, nil
}

// String is the Amount as ParseAmount reads it.
func (a Amount) String() string {
	if a.Percent {
		return strconv.Itoa(a.N) + "%"
	}
	return strconv.Itoa(a.N)
}

// Of is the Amount of a fleet of total clusters: a percentage is rounded
// up when up is true, down otherwise.
func (a Amount) Of(total int, up bool) int {
	if !a.Percent {
		return a.N
	}
	f := float64(a.N) * float64(total) / 100
	if up {
		return int(math.Ceil(f))
	}
	return int(math.Floor(f))
}
