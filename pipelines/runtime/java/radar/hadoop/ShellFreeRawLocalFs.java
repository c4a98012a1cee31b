package radar.hadoop;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FsConstants;
import org.apache.hadoop.fs.FsServerDefaults;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.local.LocalConfigKeys;

/** Hadoop's {@code RawLocalFs} (the local file system of {@code FileContext}, which Delta's log store writes
 * through) over {@link ShellFreeRawLocalFileSystem}; its overrides are {@code RawLocalFs}'s. */
public class ShellFreeRawLocalFs extends DelegateToFileSystem {
    public ShellFreeRawLocalFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
        super(uri, new ShellFreeRawLocalFileSystem(), conf, FsConstants.LOCAL_FS_URI.getScheme(), false);
    }

    @Override
    public int getUriDefaultPort() {
        return -1; // file:/// has no port
    }

    @Override
    @Deprecated
    public FsServerDefaults getServerDefaults() throws IOException {
        return LocalConfigKeys.getServerDefaults();
    }

    @Override
    public FsServerDefaults getServerDefaults(Path f) throws IOException {
        return LocalConfigKeys.getServerDefaults();
    }

    @Override
    public boolean isValidName(String src) {
        return true; // as Hadoop's: the operating system decides
    }
}
