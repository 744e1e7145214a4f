// The Java client's own partition for each key: reads lines "<partitions> <key in hex>" on
// stdin and prints, for each, the partition that Kafka's producer gives a record with that
// key (BuiltInPartitioner.partitionForKey, the keyed path of its default partitioning).
// Run as a single-file program with the broker's jars on the class path.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;

public class KafkaPartitions {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        StringBuilder out = new StringBuilder();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            String[] parts = line.split(" ", 2);
            byte[] key = HexFormat.of().parseHex(parts.length > 1 ? parts[1] : "");
            out.append(BuiltInPartitioner.partitionForKey(key, Integer.parseInt(parts[0]))).append('\n');
        }
        System.out.print(out);
    }
}
