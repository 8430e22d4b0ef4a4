package replay

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/picobridge/picobridge/ddspath/ros2"
)

// ScanConfig configures NewSyntheticScan. Zero fields take the defaults in brackets, which
// match the RPLidar A1 of the Mumble bags.
type ScanConfig struct {
	Topic    string  // ["/scan"]
	FrameID  string  // ["laser_frame"]
	Rate     float64 // scans per second [10]
	Ranges   int     // points per scan [360]
	RangeMin float32 // metres [0.1]
	RangeMax float32 // metres [12]
	// Count stops the source after that many scans; 0 means endless.
	Count int
	// Endianness of the CDR [LittleEndian].
	Endianness ros2.Endianness
}

// SyntheticScan produces sensor_msgs/LaserScan messages of a robot standing in a 4 m × 6 m
// room that turns slowly (one degree per scan), so consecutive scans differ. Every message
// is valid CDR; its header stamp is set by the engine at send time.
type SyntheticScan struct {
	cfg ScanConfig
	i   int
	msg ros2.LaserScan
}

// NewSyntheticScan validates cfg and returns the source.
func NewSyntheticScan(cfg ScanConfig) (*SyntheticScan, error) {
	if cfg.Topic == "" {
		cfg.Topic = "/scan"
	}
	if cfg.FrameID == "" {
		cfg.FrameID = "laser_frame"
	}
	if cfg.Rate == 0 {
		cfg.Rate = 10
	}
	if cfg.Ranges == 0 {
		cfg.Ranges = 360
	}
	if cfg.RangeMin == 0 {
		cfg.RangeMin = 0.1
	}
	if cfg.RangeMax == 0 {
		cfg.RangeMax = 12
	}
	if err := ros2.ValidateTopicName(cfg.Topic); err != nil {
		return nil, err
	}
	switch {
	case !(cfg.Rate > 0) || math.IsInf(cfg.Rate, 0):
		return nil, fmt.Errorf("replay: synthetic scan rate %v must be a positive number", cfg.Rate)
	case cfg.Ranges < 0 || cfg.Ranges > 1<<20:
		return nil, fmt.Errorf("replay: synthetic scan ranges %d must be in 1..%d", cfg.Ranges, 1<<20)
	case cfg.Count < 0:
		return nil, fmt.Errorf("replay: synthetic scan count %d must be >= 0", cfg.Count)
	case !(cfg.RangeMin < cfg.RangeMax):
		return nil, fmt.Errorf("replay: synthetic scan range_min %v must be below range_max %v", cfg.RangeMin, cfg.RangeMax)
	}
	inc := 2 * math.Pi / float64(cfg.Ranges)
	s := &SyntheticScan{cfg: cfg}
	s.msg = ros2.LaserScan{
		Header:         ros2.Header{FrameID: cfg.FrameID},
		AngleMin:       0,
		AngleMax:       float32(inc * float64(cfg.Ranges-1)),
		AngleIncrement: float32(inc),
		ScanTime:       float32(1 / cfg.Rate),
		TimeIncrement:  float32(1 / cfg.Rate / float64(cfg.Ranges)),
		RangeMin:       cfg.RangeMin,
		RangeMax:       cfg.RangeMax,
		Ranges:         make([]float32, cfg.Ranges),
	}
	return s, nil
}

// Topics implements Source.
func (s *SyntheticScan) Topics() []TopicInfo {
	return []TopicInfo{{Name: s.cfg.Topic, Type: ros2.LaserScanType}}
}

// Endless implements Source: true unless Count is set.
func (s *SyntheticScan) Endless() bool { return s.cfg.Count == 0 }

// Scan builds scan number i (heading i degrees) without a stamp.
func (s *SyntheticScan) Scan(i int) ros2.LaserScan {
	m := s.msg
	m.Ranges = make([]float32, len(s.msg.Ranges))
	s.fill(i, m.Ranges)
	return m
}

// fill computes ranges to the walls of a 4 m x 6 m room centred on the sensor.
func (s *SyntheticScan) fill(i int, ranges []float32) {
	const halfW, halfL = 2.0, 3.0
	heading := float64(i) * math.Pi / 180
	inc := float64(s.msg.AngleIncrement)
	for k := range ranges {
		a := heading + float64(k)*inc
		c, sn := math.Abs(math.Cos(a)), math.Abs(math.Sin(a))
		d := math.Inf(1)
		if c > 1e-9 {
			d = halfL / c
		}
		if sn > 1e-9 {
			d = math.Min(d, halfW/sn)
		}
		d = math.Max(float64(s.cfg.RangeMin), math.Min(d, float64(s.cfg.RangeMax)))
		ranges[k] = float32(math.Round(d*4000) / 4000) // 0.25 mm steps like the RPLidar
	}
}

// Next implements Source: scan i is due at i/Rate.
func (s *SyntheticScan) Next(ctx context.Context) (Item, error) {
	if err := ctx.Err(); err != nil {
		return Item{}, err
	}
	if s.cfg.Count > 0 && s.i >= s.cfg.Count {
		return Item{}, io.EOF
	}
	s.fill(s.i, s.msg.Ranges)
	at := time.Duration(math.Round(float64(s.i) / s.cfg.Rate * float64(time.Second)))
	b := s.msg.AppendCDR(make([]byte, 0, s.msg.CDRLen()), s.cfg.Endianness)
	s.i++
	return Item{At: at, Topic: s.cfg.Topic, CDR: b, Stamp: true}, nil
}

// Close implements Source.
func (s *SyntheticScan) Close() error { return nil }
