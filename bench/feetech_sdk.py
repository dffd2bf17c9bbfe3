"""Drives embodia's STS3215 emulator with Feetech's official Python SDK (feetech-servo-sdk, the
package LeRobot's feetech bus uses): ping, read, write, sync-read, sync-write at 1 Mbaud,
protocol 0, and the timeout of an absent id. Exits 1 on the first disagreement.

Usage: python feetech_sdk.py /dev/pts/N   (the path `embodia servo-emulator` prints)
"""
import sys
import time

from scservo_sdk import COMM_SUCCESS, COMM_RX_TIMEOUT, GroupSyncRead, GroupSyncWrite, PacketHandler, PortHandler

STS3215_MODEL = 777
TORQUE_ENABLE, GOAL_POSITION, PRESENT_POSITION = 40, 42, 56


def check(what, cond, detail=""):
    print(f"{'ok  ' if cond else 'FAIL'} {what} {detail}")
    if not cond:
        sys.exit(1)


port = PortHandler(sys.argv[1])
check("open port", port.openPort())
check("1 Mbaud", port.setBaudRate(1_000_000))
bus = PacketHandler(0)
for i in range(1, 7):
    model, res, err = bus.ping(port, i)
    check(f"ping id {i}", res == COMM_SUCCESS and err == 0 and model == STS3215_MODEL, f"model {model}")
pos, res, err = bus.read2ByteTxRx(port, 1, PRESENT_POSITION)
check("read present position", res == COMM_SUCCESS and 0 <= pos < 4096, f"{pos}")
res, err = bus.write1ByteTxRx(port, 1, TORQUE_ENABLE, 1)
check("write torque enable", res == COMM_SUCCESS and err == 0)
res, err = bus.write2ByteTxRx(port, 1, GOAL_POSITION, 2500)
check("write goal position", res == COMM_SUCCESS and err == 0)
deadline = time.time() + 3.0
while time.time() < deadline:
    pos, res, _ = bus.read2ByteTxRx(port, 1, PRESENT_POSITION)
    if res == COMM_SUCCESS and abs(pos - 2500) <= 2:
        break
    time.sleep(0.05)
check("servo 1 reaches its goal", abs(pos - 2500) <= 2, f"{pos}")
reader = GroupSyncRead(port, bus, PRESENT_POSITION, 2)
for i in range(1, 7):
    reader.addParam(i)
res = reader.txRxPacket()
got = [reader.getData(i, PRESENT_POSITION, 2) for i in range(1, 7)]
check("sync read of ids 1-6", res == COMM_SUCCESS and abs(got[0] - 2500) <= 2, f"{got}")
writer = GroupSyncWrite(port, bus, TORQUE_ENABLE, 1)
for i in range(1, 7):
    writer.addParam(i, [1])
check("sync write torque enable", writer.txPacket() == COMM_SUCCESS)
on = [bus.read1ByteTxRx(port, i, TORQUE_ENABLE)[0] for i in range(1, 7)]
check("sync write took effect", on == [1] * 6, f"{on}")
_, res, _ = bus.ping(port, 9)
check("absent id 9 times out", res == COMM_RX_TIMEOUT, f"{res}")
