import java.io.FileInputStream;
import java.io.IOException;
import java.util.logging.Level;
import java.util.logging.Logger;

/** Prints two SEVERE records with java.util.logging's default SimpleFormatter (to stderr): one with the exception
 * that opening a missing file really throws, one without. */
public class JulSevere {
    public static void main(String[] args) {
        Logger log = Logger.getLogger(JulSevere.class.getName());
        try (FileInputStream in = new FileInputStream("/nonexistent/flink-conf.yaml")) {
            in.read();
        } catch (IOException e) {
            log.log(Level.SEVERE, "Could not read the configuration", e);
        }
        log.severe("Giving up");
    }
}
