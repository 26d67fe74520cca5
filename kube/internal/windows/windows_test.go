package windows_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/internal/windows"
)

func TestCalendar(t *testing.T) {
	sat := time.Date(2026, 12, 12, 1, 30, 0, 0, time.UTC) // Saturday 02:30 in Paris
	tests := []struct {
		name string
		ws   []v1alpha1.MaintenanceWindow
		open bool
		err  string
	}{
		{name: "none: always open", open: true},
		{name: "inside", ws: []v1alpha1.MaintenanceWindow{{Schedule: "0 2 * * SAT", Duration: metav1.Duration{Duration: 4 * time.Hour}, TimeZone: "Europe/Paris"}}, open: true},
		{name: "outside", ws: []v1alpha1.MaintenanceWindow{{Schedule: "0 2 * * SUN", Duration: metav1.Duration{Duration: 4 * time.Hour}, TimeZone: "Europe/Paris"}}},
		{name: "invalid", ws: []v1alpha1.MaintenanceWindow{{Schedule: "0 2 * *", Duration: metav1.Duration{Duration: time.Hour}}}, err: "0 2 * *"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cal, err := windows.Calendar(tt.ws)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err, "the error names the schedule")
				return
			}
			require.NoError(t, err)
			open, _ := cal.Open(sat)
			assert.Equal(t, tt.open, open || cal.Always())
		})
	}
}

func ExampleCalendar() {
	cal, err := windows.Calendar([]v1alpha1.MaintenanceWindow{{Schedule: "0 2 * * SAT", Duration: metav1.Duration{Duration: 4 * time.Hour}, TimeZone: "Europe/Paris"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cal.NextOpen(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)).UTC())
	// Output: 2026-12-12 01:00:00 +0000 UTC
}
