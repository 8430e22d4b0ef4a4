package fastddspeer

import _ "embed"

// AddServerSource is src/addserver.cpp: an example_interfaces/srv/AddTwoInts
// server in rmw_fastrtps's convention (plain CDR, replies carry the related
// sample identity in RTPS inline QoS), the cross-vendor service peer.
//
//go:embed src/addserver.cpp
var AddServerSource []byte

// BuildAddServer compiles the AddTwoInts server into dir (once per source
// version) and returns its path. Run it with --service /name --domain D; it
// prints "ready", then "served a=<a> b=<b> related=<0|1>" per request, and
// ends when its stdin closes.
func BuildAddServer(dir string) (string, error) {
	if err := Check(); err != nil {
		return "", err
	}
	return Compile(dir, "addserver", AddServerSource)
}
