package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExitStatus: picoeval's usage errors exit 2 with one line naming the
// flag, before anything starts.
func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"extra"}, `picoeval: unknown command "extra" for "picoeval" (see picoeval --help)`},
		{[]string{"--quick=maybe"}, `picoeval: invalid argument "maybe" for "--quick" flag: strconv.ParseBool: parsing "maybe": invalid syntax (see picoeval --help)`},
		{[]string{"--only", "exp1,exp9"}, `picoeval: --only exp9: unknown experiment (want exp1, exp2, exp3, exp4, exp5, exp6)`},
		{[]string{"--duration", "-1s"}, `picoeval: --duration -1s: must be ≥ 0 (0: the defaults)`},
		{[]string{"--bag", "/nonexistent/bag"}, `picoeval: --bag /nonexistent/bag: not a bag directory`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := realMain(context.Background(), tc.args, &stdout, &stderr)
			require.Equal(t, tc.want+"\n", stderr.String())
			require.Equal(t, 2, code)
			require.Empty(t, stdout.String())
		})
	}
}
