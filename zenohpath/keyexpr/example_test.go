package keyexpr_test

import (
	"errors"
	"fmt"

	"github.com/picobridge/picobridge/zenohpath/keyexpr"
)

func ExampleCanonize() {
	c, _ := keyexpr.Canonize("robot/**/**/*/$*/imu$*")
	fmt.Println(c)
	// Output: robot/*/*/**/imu$*
}

func ExampleValidate() {
	err := keyexpr.Validate("robot//imu")
	fmt.Println(err)
	var ke *keyexpr.Error
	if errors.As(err, &ke) {
		fmt.Println(ke.Offset, errors.Is(err, keyexpr.ErrEmptyChunk))
	}
	// Output:
	// keyexpr "robot//imu": empty chunk (leading, trailing or double '/') at byte 6
	// 6 true
}

func ExampleIntersects() {
	fmt.Println(keyexpr.Intersects("a/*", "*/b"))
	fmt.Println(keyexpr.Intersects("@ros2_lv/**", "**"))
	// Output:
	// true
	// false
}

func ExampleIncludes() {
	fmt.Println(keyexpr.Includes("a/**", "a/b/*"))
	fmt.Println(keyexpr.Includes("a/*", "a/**"))
	// Output:
	// true
	// false
}

func ExampleMatcher() {
	sub, _ := keyexpr.Compile("0/scan/**")
	fmt.Println(sub.Matches("0/scan/sensor_msgs::msg::dds_::LaserScan_/RIHS01_df66"))
	fmt.Println(sub.Matches("0/chatter/std_msgs::msg::dds_::String_/RIHS01_df66"))
	// Output:
	// true
	// false
}

func ExampleKeyExpr_Join() {
	ns := keyexpr.MustNew("0/robot1")
	k, _ := ns.Join("**/imu")
	fmt.Println(k)
	// Output: 0/robot1/**/imu
}
