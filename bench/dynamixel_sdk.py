"""Drives embodia's Dynamixel emulator (the Koch v1.1 follower: XL430-W250 ids 1-2, XL330-M288
ids 3-6) with Robotis' official Python SDK (dynamixel-sdk, the package LeRobot's dynamixel bus
uses): ping with model numbers, read, write, sync-read, sync-write at 1 Mbaud, protocol 2.0,
the hardware-error register, a refused EEPROM write, and the timeout of an absent id. Exits 1
on the first disagreement.

Usage: python dynamixel_sdk.py /dev/pts/N   (the path `embodia servo-emulator --robot koch` prints)
"""
import os
import sys
import time

# Python puts this file's folder first on the path, and this file is itself named
# dynamixel_sdk.py: drop the folder so that the import below finds Robotis' package.
here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != here]

from dynamixel_sdk import (  # noqa: E402
    COMM_RX_TIMEOUT,
    COMM_SUCCESS,
    GroupSyncRead,
    GroupSyncWrite,
    PacketHandler,
    PortHandler,
)

XL430_W250, XL330_M288 = 1060, 1200
OPERATING_MODE, TORQUE_ENABLE, HARDWARE_ERROR = 11, 64, 70
GOAL_POSITION, PRESENT_POSITION = 116, 132
ACCESS_ERROR = 7


def check(what, cond, detail=""):
    print(f"{'ok  ' if cond else 'FAIL'} {what} {detail}")
    if not cond:
        sys.exit(1)


port = PortHandler(sys.argv[1])
check("open port", port.openPort())
check("1 Mbaud", port.setBaudRate(1_000_000))
bus = PacketHandler(2.0)
for i in range(1, 7):
    model, res, err = bus.ping(port, i)
    expected = XL430_W250 if i <= 2 else XL330_M288
    check(f"ping id {i}", res == COMM_SUCCESS and err == 0 and model == expected, f"model {model}")
pos, res, err = bus.read4ByteTxRx(port, 3, PRESENT_POSITION)
check("read present position", res == COMM_SUCCESS and err == 0 and 0 <= pos < 4096, f"{pos}")
res, err = bus.write1ByteTxRx(port, 3, TORQUE_ENABLE, 1)
check("write torque enable", res == COMM_SUCCESS and err == 0)
res, err = bus.write4ByteTxRx(port, 3, GOAL_POSITION, 2500)
check("write goal position", res == COMM_SUCCESS and err == 0)
deadline = time.time() + 3.0
while time.time() < deadline:
    pos, res, _ = bus.read4ByteTxRx(port, 3, PRESENT_POSITION)
    if res == COMM_SUCCESS and abs(pos - 2500) <= 2:
        break
    time.sleep(0.05)
check("servo 3 reaches its goal", abs(pos - 2500) <= 2, f"{pos}")
res, err = bus.write1ByteTxRx(port, 3, OPERATING_MODE, 4)
check("an EEPROM write with torque on is refused (access error)", res == COMM_SUCCESS and err == ACCESS_ERROR, f"{err}")
hw, res, err = bus.read1ByteTxRx(port, 3, HARDWARE_ERROR)
check("hardware error status is clear", res == COMM_SUCCESS and hw == 0, f"{hw}")
reader = GroupSyncRead(port, bus, PRESENT_POSITION, 4)
for i in range(1, 7):
    reader.addParam(i)
res = reader.txRxPacket()
got = [reader.getData(i, PRESENT_POSITION, 4) for i in range(1, 7)]
check("sync read of ids 1-6", res == COMM_SUCCESS and abs(got[2] - 2500) <= 2, f"{got}")
writer = GroupSyncWrite(port, bus, TORQUE_ENABLE, 1)
for i in range(1, 7):
    writer.addParam(i, [1])
check("sync write torque enable", writer.txPacket() == COMM_SUCCESS)
on = [bus.read1ByteTxRx(port, i, TORQUE_ENABLE)[0] for i in range(1, 7)]
check("sync write took effect", on == [1] * 6, f"{on}")
writer = GroupSyncWrite(port, bus, GOAL_POSITION, 4)
for i in range(1, 7):
    writer.addParam(i, list((1800 + 100 * i).to_bytes(4, "little")))
check("sync write goal positions", writer.txPacket() == COMM_SUCCESS)
goals = [bus.read4ByteTxRx(port, i, GOAL_POSITION)[0] for i in range(1, 7)]
check("sync write goals took effect", goals == [1800 + 100 * i for i in range(1, 7)], f"{goals}")
_, res, _ = bus.ping(port, 9)
check("absent id 9 times out", res == COMM_RX_TIMEOUT, f"{res}")
