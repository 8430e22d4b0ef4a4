//go:build !linux

package bridge

// otherThreads refuses: threads have no scheduling of their own to set
// here. policy.express.realtime logs one WARN line and the gateway runs at
// normal priority.
type otherThreads struct{}

func osThreads() threadSys { return otherThreads{} }

func osThreadsResetOnFork() threadSys { return otherThreads{} }

func (otherThreads) threads() ([]osThread, error) { return nil, errRealtimeUnsupported }
func (otherThreads) setFIFO(tid, prio int) error  { return errRealtimeUnsupported }
func (otherThreads) setNice(tid, n int) error     { return errRealtimeUnsupported }
func (otherThreads) setGroupNice(n int) error     { return errNoAutogroup }
