package io.conclave.cli.harness;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodType;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.concurrent.DelayQueue;
import java.util.concurrent.Delayed;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import jdk.incubator.foreign.CLinker;
import jdk.incubator.foreign.FunctionDescriptor;
import jdk.incubator.foreign.MemoryAccess;
import jdk.incubator.foreign.MemoryAddress;
import jdk.incubator.foreign.MemorySegment;
import jdk.incubator.foreign.ResourceScope;
import jdk.incubator.foreign.SymbolLookup;

/**
 * A lossy wire in user space, for kernels without {@code tc netem} (this machine's): two TUN devices, every IP packet
 * read from one written to the other, each dropped with probability {@code loss} and otherwise held for
 * {@code delay ± jitter} milliseconds (so packets are reordered as netem's jitter reorders them). {@link TestHosts#lossy}
 * runs it in the hub namespace, moves one device into a server's namespace and routes that server's traffic through
 * the pair: real packet loss and delay under real TCP and UDP, with their retransmissions.
 *
 * <p>A child JVM of its own: {@code java --add-modules jdk.incubator.foreign --enable-native-access=ALL-UNNAMED
 * io.conclave.cli.harness.LossyLink A B LOSS_PERCENT DELAY_MS JITTER_MS SEED}. Java 17 opens a TUN device only through
 * {@code ioctl(TUNSETIFF)}, hence the foreign-function API (incubating in 17). It prints {@code ready} once both
 * devices exist, relays until its standard input closes (its parent gone, or done), then prints
 * {@code relayed N dropped M} and exits; the devices go with its descriptors.
 */
public final class LossyLink {

    private static final int O_RDWR = 2;
    private static final long TUNSETIFF = 0x400454caL;
    private static final short IFF_TUN = 0x0001;
    private static final short IFF_NO_PI = 0x1000;
    private static final int IFNAMSIZ = 16;
    private static final int MAX_PACKET = 65_536;

    private static final CLinker LINKER = CLinker.getInstance();
    private static final SymbolLookup LIBC = CLinker.systemLookup();
    private static final MethodHandle OPEN = function("open", MethodType.methodType(int.class, MemoryAddress.class, int.class),
            FunctionDescriptor.of(CLinker.C_INT, CLinker.C_POINTER, CLinker.C_INT));
    private static final MethodHandle IOCTL = function("ioctl", MethodType.methodType(int.class, int.class, long.class, MemoryAddress.class),
            FunctionDescriptor.of(CLinker.C_INT, CLinker.C_INT, CLinker.C_LONG, CLinker.asVarArg(CLinker.C_POINTER)));
    private static final MethodHandle READ = function("read", MethodType.methodType(long.class, int.class, MemoryAddress.class, long.class),
            FunctionDescriptor.of(CLinker.C_LONG, CLinker.C_INT, CLinker.C_POINTER, CLinker.C_LONG));
    private static final MethodHandle WRITE = function("write", MethodType.methodType(long.class, int.class, MemoryAddress.class, long.class),
            FunctionDescriptor.of(CLinker.C_LONG, CLinker.C_INT, CLinker.C_POINTER, CLinker.C_LONG));

    private final double loss;
    private final long delayNanos;
    private final long jitterNanos;
    private final Random random;
    private final AtomicLong relayed = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();

    private LossyLink(double loss, long delayMillis, long jitterMillis, long seed) {
        this.loss = loss;
        this.delayNanos = TimeUnit.MILLISECONDS.toNanos(delayMillis);
        this.jitterNanos = TimeUnit.MILLISECONDS.toNanos(jitterMillis);
        this.random = new Random(seed);
    }

    public static void main(String[] args) throws Throwable {
        if (args.length != 6) {
            System.err.println("usage: LossyLink DEVICE_A DEVICE_B LOSS_PERCENT DELAY_MS JITTER_MS SEED");
            System.exit(2);
        }
        double percent = Double.parseDouble(args[2]);
        long delay = Long.parseLong(args[3]);
        long jitter = Long.parseLong(args[4]);
        if (percent < 0 || percent > 100 || delay < 0 || jitter < 0 || jitter > delay) {
            System.err.println("loss must be 0..100 percent, delay and jitter non-negative, jitter at most the delay");
            System.exit(2);
        }
        LossyLink link = new LossyLink(percent / 100, delay, jitter, Long.parseLong(args[5]));
        int a = openTun(args[0]);
        int b = openTun(args[1]);
        link.direction(a, b, args[0] + ">" + args[1]);
        link.direction(b, a, args[1] + ">" + args[0]);
        System.out.println("ready");
        System.out.flush();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            while (in.readLine() != null) {
                // nothing is asked of it: it relays until its input closes
            }
        }
        System.out.println("relayed " + link.relayed.get() + " dropped " + link.dropped.get());
        System.out.flush();
        System.exit(0); // the descriptors close with the process, and the devices with them
    }

    /** A TUN device named {@code name} (IP packets, no packet-information header), created in this namespace. */
    private static int openTun(String name) throws Throwable {
        byte[] bytes = name.getBytes(StandardCharsets.US_ASCII);
        if (bytes.length == 0 || bytes.length >= IFNAMSIZ) {
            throw new IllegalArgumentException("a device name has 1 to " + (IFNAMSIZ - 1) + " characters: " + name);
        }
        try (ResourceScope scope = ResourceScope.newConfinedScope()) {
            int fd = (int) OPEN.invokeExact(CLinker.toCString("/dev/net/tun", scope).address(), O_RDWR);
            if (fd < 0) {
                throw new IllegalStateException("cannot open /dev/net/tun (root, and a kernel with TUN, are needed)");
            }
            MemorySegment request = MemorySegment.allocateNative(40, scope); // struct ifreq: the name, then the flags
            for (int i = 0; i < bytes.length; i++) {
                MemoryAccess.setByteAtOffset(request, i, bytes[i]);
            }
            MemoryAccess.setShortAtOffset(request, IFNAMSIZ, (short) (IFF_TUN | IFF_NO_PI));
            int result = (int) IOCTL.invokeExact(fd, TUNSETIFF, request.address());
            if (result < 0) {
                throw new IllegalStateException("ioctl(TUNSETIFF) failed for " + name + " (does the device exist already?)");
            }
            return fd;
        }
    }

    /** Packets read from {@code from}, dropped or held, then written to {@code to}: a reader thread and a writer thread. */
    private void direction(int from, int to, String name) {
        DelayQueue<Packet> held = new DelayQueue<>();
        Thread reader = new Thread(() -> {
            MemorySegment buffer = MemorySegment.allocateNative(MAX_PACKET, ResourceScope.newConfinedScope());
            while (true) {
                long n;
                try {
                    n = (long) READ.invokeExact(from, buffer.address(), (long) MAX_PACKET);
                } catch (Throwable e) {
                    throw new IllegalStateException(e);
                }
                if (n <= 0) {
                    continue; // interrupted by a signal, or the device down for a moment
                }
                byte[] packet = buffer.asSlice(0, n).toByteArray();
                long due;
                synchronized (random) {
                    if (random.nextDouble() < loss) {
                        dropped.incrementAndGet();
                        continue;
                    }
                    due = System.nanoTime() + delayNanos + (jitterNanos == 0 ? 0 : (long) ((random.nextDouble() * 2 - 1) * jitterNanos));
                }
                held.add(new Packet(packet, due));
            }
        }, "lossy-link-read-" + name);
        Thread writer = new Thread(() -> {
            MemorySegment buffer = MemorySegment.allocateNative(MAX_PACKET, ResourceScope.newConfinedScope());
            while (true) {
                Packet packet;
                try {
                    packet = held.take();
                } catch (InterruptedException e) {
                    return;
                }
                buffer.asSlice(0, packet.bytes.length).copyFrom(MemorySegment.ofArray(packet.bytes));
                try {
                    long n = (long) WRITE.invokeExact(to, buffer.address(), (long) packet.bytes.length);
                    if (n == packet.bytes.length) {
                        relayed.incrementAndGet();
                    }
                } catch (Throwable e) {
                    throw new IllegalStateException(e);
                }
            }
        }, "lossy-link-write-" + name);
        reader.setDaemon(true);
        writer.setDaemon(true);
        reader.start();
        writer.start();
    }

    private static MethodHandle function(String name, MethodType type, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(LIBC.lookup(name).orElseThrow(() -> new IllegalStateException("no " + name + " in libc")), type,
                descriptor);
    }

    /** A packet held until {@code due} (monotonic nanoseconds). */
    private record Packet(byte[] bytes, long due) implements Delayed {
        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(due - System.nanoTime(), TimeUnit.NANOSECONDS);
        }

        @Override
        public int compareTo(Delayed other) {
            return Long.compare(due, ((Packet) other).due);
        }
    }
}
