package radar.hadoop;

import org.apache.hadoop.fs.LocalFileSystem;

/** Hadoop's checksummed local file system ({@code fs.file.impl}) over {@link ShellFreeRawLocalFileSystem}. */
public class ShellFreeLocalFileSystem extends LocalFileSystem {
    public ShellFreeLocalFileSystem() {
        super(new ShellFreeRawLocalFileSystem());
    }
}
