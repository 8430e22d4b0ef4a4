package runner

import (
	"os"
	"os/exec"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/eval/fastddspub"
)

// ddsMissing says why DDS experiments cannot run here ("" when they can).
func ddsMissing() string {
	if !ddspath.Available {
		return "Cyclone DDS (build with -tags cyclonedds and cyclonedds-dev installed)"
	}
	return ""
}

// fastDDSMissing also needs g++ and libfastrtps-dev for fastddspub.
func fastDDSMissing() string {
	if m := ddsMissing(); m != "" {
		return m
	}
	if err := fastddspub.Check(); err != nil {
		return err.Error()
	}
	return ""
}

// pythonZenoh is the interpreter with eclipse-zenoh ($PICOBRIDGE_PYTHON or python3).
func pythonZenoh() string {
	if p := os.Getenv("PICOBRIDGE_PYTHON"); p != "" {
		return p
	}
	return "python3"
}

// zenohMissing says why the stock Rust router experiment cannot run ("" when it can).
func zenohMissing() string {
	if err := exec.Command(pythonZenoh(), "-c", "import zenoh").Run(); err != nil {
		return "Python eclipse-zenoh 1.x (pip install eclipse-zenoh==1.10.2)"
	}
	return ""
}
