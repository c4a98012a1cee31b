package radar.hadoop;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;

/** Hadoop's checksummed {@code LocalFs} ({@code fs.AbstractFileSystem.file.impl}) over {@link ShellFreeRawLocalFs}. */
public class ShellFreeLocalFs extends ChecksumFs {
    public ShellFreeLocalFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
        super(new ShellFreeRawLocalFs(uri, conf));
    }
}
