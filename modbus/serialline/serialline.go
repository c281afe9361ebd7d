package serialline

// StandardBauds are the baud rates a serial line may be configured with:
// the rates RS485 Modbus devices offer, lowest first.
var StandardBauds = []int{1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400}
