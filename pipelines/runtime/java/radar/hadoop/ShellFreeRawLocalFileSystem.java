package radar.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's raw local file system, setting permissions and reading a path's link status through java.nio.
 *
 * <p>Without Hadoop's native library (which pip's pyspark does not ship), Hadoop 3.4 sets the permission of every
 * file it creates by starting a {@code chmod} process, and reads a path's link status, on every rename, by starting
 * {@code readlink}: ~5 ms each, ~500 per replay of the bundled sample. Everything else is Hadoop's own.
 */
public class ShellFreeRawLocalFileSystem extends RawLocalFileSystem {
    private static final PosixFilePermission[] BITS = {
        PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
        PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
        PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ,
    };

    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
        if (permission.getStickyBit()) {
            super.setPermission(p, permission); // java.nio cannot set it; Hadoop's shell command can
            return;
        }
        short mode = permission.toShort();
        Set<PosixFilePermission> wanted = EnumSet.noneOf(PosixFilePermission.class);
        for (int bit = 0; bit < BITS.length; bit++) {
            if ((mode & (1 << bit)) != 0) {
                wanted.add(BITS[bit]);
            }
        }
        try {
            Files.setPosixFilePermissions(pathToFile(p).toPath(), wanted);
        } catch (UnsupportedOperationException notPosix) {
            super.setPermission(p, permission); // a file system without POSIX permissions: Hadoop's own way
        }
    }

    @Override
    public FileStatus getFileLinkStatus(Path f) throws IOException {
        if (Files.isSymbolicLink(pathToFile(f).toPath())) {
            return super.getFileLinkStatus(f); // a real link: Hadoop's own answer
        }
        return getFileStatus(f); // what Hadoop answers for a path that is no link (FileNotFoundException if absent)
    }
}
